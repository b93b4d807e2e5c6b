"""The ``Embedder`` port's contract, run against every adapter installed here: the hashing
embedder always, MiniLM on onnxruntime and on torch when their packages are present.

What any caller may rely on: float32 unit rows of the embedder's ``dim``, one per text in input
order (even an empty text); the same text gives the same vector; a batch gives the vectors its
texts give one at a time; a long run's ``embed_bulk`` and a cached ``computed`` answer as
``embed`` does; a bare string is refused, not embedded letter by letter.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from lamarck.domain.embedder import Embedder
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.embedding_common import DEFAULT_DIM
from lamarck.node.minilm_onnx import OnnxMiniLMEmbedder, OnnxParams, onnx_available
from lamarck.node.minilm_torch import MiniLMEmbedder, minilm_available

TEXTS = [
    "Run pytest from the repo root, not from tests/",
    "Invoke pytest in the repository root directory instead of the tests folder",
    "Use apt-get update before apt-get install on a fresh Debian image",
    "",
    "¡Ünïcode — ok!",
]

#: How far two runs of a model over the same text may drift: padding in a batch and the
#: order of float sums change the last bits, never the direction.
MODEL_ATOL = 1e-4
#: A long run may use the 8-bit weights (``OnnxParams.bulk_weights``): within cosine 0.999.
BULK_COSINE = 0.999


def _no_minilm() -> bool:
    return not minilm_available()


def _no_onnx() -> bool:
    return not (minilm_available() and onnx_available())


@pytest.fixture(
    scope="module",
    params=[
        "hashing",
        pytest.param(
            "minilm-onnx",
            marks=[
                pytest.mark.slow,
                pytest.mark.skipif(_no_onnx(), reason="onnxruntime or the model is absent"),
            ],
        ),
        pytest.param(
            "minilm-torch",
            marks=[
                pytest.mark.slow,
                pytest.mark.skipif(_no_minilm(), reason="the MiniLM model is absent"),
            ],
        ),
    ],
)
def embedder(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    """Each installed adapter in turn, loaded once for the module (a model is ~5 s)."""
    if request.param == "hashing":
        yield HashingEmbedder()
    elif request.param == "minilm-onnx":
        # The default cache: a machine that ran the node has the export, and a first run
        # exports it there once.
        yield OnnxMiniLMEmbedder(params=OnnxParams())
    else:
        model = MiniLMEmbedder()
        model.load()
        yield model


def _atol(embedder: Embedder) -> float:
    return 0.0 if isinstance(embedder, HashingEmbedder) else MODEL_ATOL


def test_rows_are_float32_unit_vectors_of_its_dimension_in_input_order(
    embedder: Embedder,
) -> None:
    vectors = embedder.embed(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, embedder.dim)
    one = embedder.embed_one(TEXTS[0])
    assert one.shape == (embedder.dim,) and one.dtype == np.float32


def test_the_same_text_gives_the_same_vector(embedder: Embedder) -> None:
    first = embedder.embed(TEXTS)
    again = embedder.embed(list(TEXTS))
    np.testing.assert_allclose(first, again, rtol=0, atol=_atol(embedder))


def test_a_batch_gives_the_vectors_of_its_texts_one_at_a_time(embedder: Embedder) -> None:
    batch = embedder.embed(TEXTS)
    singles = np.stack([embedder.embed_one(text) for text in TEXTS])
    np.testing.assert_allclose(batch, singles, rtol=0, atol=_atol(embedder))
    reversed_batch = embedder.embed(TEXTS[::-1])
    np.testing.assert_allclose(reversed_batch[::-1], batch, rtol=0, atol=_atol(embedder))


def test_a_long_runs_batches_give_the_same_vectors(embedder: Embedder) -> None:
    want = embedder.embed(TEXTS)
    with embedder.bulk():
        got = embedder.embed_bulk(TEXTS)
    assert got.shape == want.shape and got.dtype == np.float32
    assert float(np.min(np.sum(got * want, axis=1))) >= BULK_COSINE


def test_a_vector_at_hand_is_the_one_embed_gives(embedder: Embedder) -> None:
    text = TEXTS[1]
    want = embedder.embed([text])
    at_hand = embedder.computed([text])
    if at_hand is not None:
        np.testing.assert_allclose(at_hand, want, rtol=0, atol=_atol(embedder))
    assert isinstance(embedder.inline([text]), bool)


def test_every_adapter_has_the_default_dimension_and_names_its_space(embedder: Embedder) -> None:
    """One dimension for all (the store's vector column fits any of them); the name tells
    their spaces apart."""
    assert embedder.dim == DEFAULT_DIM
    assert embedder.name and embedder.name == embedder.name


def test_a_bare_string_is_refused(embedder: Embedder) -> None:
    """A str is a Sequence[str]; embedding its letters one by one would be a silent bug."""
    with pytest.raises(TypeError):
        embedder.embed("Run pytest from the repo root")
