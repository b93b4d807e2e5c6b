"""The ONNX MiniLM embedder: the torch model's vectors without torch in the process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from lamarck.errors import ConfigError
from lamarck.node import minilm_onnx
from lamarck.node.embedding import make_embedder
from lamarck.node.embedding_common import MINILM_MODEL_NAME
from lamarck.node.minilm_onnx import (
    INT8_DOT_FLAGS,
    OnnxMiniLMEmbedder,
    OnnxParams,
    cpu_flags,
    int8_dot_product,
    onnx_model_file,
    weights8_agreement,
    weights8_file,
)
from lamarck.node.minilm_torch import MiniLMEmbedder

TEXTS = [
    "Run pytest from the repo root, not from tests/",
    "prefer `uv pip install` over `pip install` for services on macos",
    '`npm ci` fails with "ERESOLVE unable to resolve dependency tree" when the lockfile is old',
    "How do I rerun only the failures with pytest on ci?",
    "x",
    "word " * 400,  # longer than the model's 256 tokens: truncated like sentence-transformers
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def onnx(cache_dir: Path) -> Iterator[OnnxMiniLMEmbedder]:
    yield OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams())


def test_onnx_vectors_match_the_torch_model_within_cosine_0_999(
    onnx: OnnxMiniLMEmbedder,
) -> None:
    """Same model, other runtime: every vector within cosine 0.999 of sentence-transformers'."""
    ours = onnx.embed(TEXTS)
    theirs = MiniLMEmbedder().embed(TEXTS)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() >= 0.999, cosines
    assert onnx.name == MINILM_MODEL_NAME  # one vector space: stored vectors stay comparable


def test_the_export_fuses_each_layers_attention_into_one_operator(
    onnx: OnnxMiniLMEmbedder,
) -> None:
    """Traced eagerly, the optimiser recognises the attention: one ``Attention`` operator a
    layer and no loose softmax, so a one-text query pays a few dozen operator hand-offs
    between the intra-op threads instead of ~300 (the vectors are checked above)."""
    onnx_module = pytest.importorskip("onnx")
    ops = [n.op_type for n in onnx_module.load(str(onnx.model_file)).graph.node]
    assert ops.count("Attention") == 6, sorted(set(ops))  # all-MiniLM-L6-v2: six layers
    assert "Softmax" not in ops
    assert len(ops) <= 60, len(ops)


def test_onnx_rows_are_float32_unit_vectors_in_input_order(onnx: OnnxMiniLMEmbedder) -> None:
    """Batches are sorted by length inside; the rows come back in the caller's order."""
    batch = onnx.embed(TEXTS)
    assert batch.shape == (len(TEXTS), 384) and batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(TEXTS):
        np.testing.assert_allclose(onnx.embed([text])[0], batch[i], atol=1e-4)


def test_a_bulk_block_embeds_on_its_own_session_with_the_same_vectors(
    onnx: OnnxMiniLMEmbedder,
) -> None:
    """Inside ``bulk()`` (a catch-up) batches run on a second, single-threaded session on
    the full weights, ``bulk_parallel`` of them at once: the query session's vectors within
    cosine 0.999 (it runs the 8-bit weights), the same whatever the batches; overlapping
    blocks share it and the last one to end closes it."""
    query_setup = onnx.embed_bulk(TEXTS)  # no block open: the query session
    assert not onnx.bulk_open
    # As many single-threaded runs at once as the query session has threads.
    assert onnx.bulk_parallel == onnx._session.get_session_options().intra_op_num_threads
    with onnx.bulk():
        assert onnx.bulk_open
        with onnx.bulk():
            with ThreadPoolExecutor(2) as pool:
                halves = list(pool.map(onnx.embed_bulk, [TEXTS[:3], TEXTS[3:]]))
            bulk = np.concatenate(halves)
        assert onnx.bulk_open  # the outer block still runs
        whole = onnx.embed_bulk(TEXTS)
    assert not onnx.bulk_open
    np.testing.assert_allclose(bulk, whole, atol=1e-5)
    assert ((bulk * query_setup).sum(axis=1)).min() >= 0.999
    np.testing.assert_allclose(query_setup, onnx.embed(TEXTS), atol=1e-5)
    assert onnx._bulk_session is None


def test_the_sessions_threads_stop_spinning_when_a_run_ends_unless_asked(
    cache_dir: Path,
) -> None:
    """After a run a spinning helper thread holds a core the node needs for Postgres and
    the reply (the recall tail); within a run the threads spin between
    operators, and ``spin_after_run=True`` lets them go on."""

    def config(e: OnnxMiniLMEmbedder) -> tuple[str, str]:
        options = e._session.get_session_options()
        return (
            str(options.get_session_config_entry("session.intra_op.allow_spinning")),
            str(options.get_session_config_entry("session.force_spinning_stop")),
        )

    assert OnnxParams().spin_after_run is False
    assert config(OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams())) == ("1", "1")
    spinning = OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams(spin_after_run=True))
    assert config(spinning) == ("1", "0")


def test_a_repeated_query_is_answered_from_the_cache_unchanged(
    onnx: OnnxMiniLMEmbedder,
) -> None:
    """The second embedding of one text is the first's vector, and a caller's edit of a
    returned row never reaches the cache."""
    first = onnx.embed(["deploy the api workers"])
    first[0, :] = 0.0
    second = onnx.embed(["deploy the api workers"])
    third = onnx.embed(["deploy the api workers"])
    np.testing.assert_array_equal(second, third)
    assert np.linalg.norm(second) == pytest.approx(1.0, abs=1e-5)


def test_only_a_query_asked_before_is_at_hand(onnx: OnnxMiniLMEmbedder) -> None:
    """``computed`` answers from the query cache alone (no model call on the event loop):
    a single text embedded before, as a copy of what ``embed`` gave."""
    text = "rotate the staging api keys before the audit"
    assert onnx.computed([text]) is None
    first = onnx.embed([text])
    at_hand = onnx.computed([text])
    assert at_hand is not None
    np.testing.assert_array_equal(at_hand, first)
    at_hand[0, :] = 0.0
    np.testing.assert_array_equal(onnx.embed([text]), first)  # the cache kept its own copy
    assert onnx.computed([text, text]) is None  # batches are never cached


def test_queries_run_on_8_bit_weights_and_batches_on_the_full_ones_when_asked(
    cache_dir: Path,
) -> None:
    """The query session loads the 8-bit weights' file (MatMulNBits), exported beside the
    full one and kept because it agrees with it; with ``bulk_weights="full"`` the bulk
    session the full weights; their vectors agree within cosine 0.999 (and each with
    torch's, above)."""
    onnx_module = pytest.importorskip("onnx")
    onnx = OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams(bulk_weights="full"))
    assert onnx.query_file == weights8_file(onnx.model_file) != onnx.model_file
    assert onnx.bulk_file == onnx.model_file
    ops = {n.op_type for n in onnx_module.load(str(onnx.query_file)).graph.node}
    assert "MatMulNBits" in ops
    model = Path(MiniLMEmbedder()._path)
    least = weights8_agreement(model, onnx.model_file, onnx.query_file, onnx.params.max_seq_length)
    assert least >= 0.999
    queries = onnx.embed(TEXTS)
    with onnx.bulk():
        full = onnx.embed_bulk(TEXTS)
    assert (queries * full).sum(axis=1).min() >= 0.999
    assert not np.array_equal(queries, full)  # two files, two sets of weights


def test_batches_run_on_the_8_bit_weights_where_the_processor_multiplies_in_int8(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bulk_weights="8bit"``: the bulk session loads the 8-bit file and gives the query
    session's vectors; ``"auto"`` follows ``int8_dot_product`` (the processor's flags)."""
    eight = OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams(bulk_weights="8bit"))
    assert eight.bulk_file == eight.query_file == weights8_file(eight.model_file)
    queries = eight.embed(TEXTS)
    with eight.bulk():
        bulk = eight.embed_bulk(TEXTS)
    np.testing.assert_allclose(bulk, queries, atol=1e-4)  # one file, one set of weights
    for has_int8, expected in ((True, "w8"), (False, "full")):
        monkeypatch.setattr(minilm_onnx, "int8_dot_product", lambda has=has_int8: has)
        auto = OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams())
        assert OnnxParams().bulk_weights_8bit is has_int8
        assert (auto.bulk_file == weights8_file(auto.model_file)) is (expected == "w8")
        assert (auto.bulk_file == auto.model_file) is (expected == "full")
    # Neither session on 8-bit weights: the export writes no 8-bit file.
    monkeypatch.setattr(minilm_onnx, "int8_dot_product", lambda: True)
    assert OnnxParams(query_weights_8bit=False).wants_weights8
    assert not OnnxParams(query_weights_8bit=False, bulk_weights="full").wants_weights8


def test_int8_dot_product_instructions_are_read_from_the_processor_flags() -> None:
    """The flags line of ``/proc/cpuinfo``: AVX-512 VNNI, AVX-VNNI or AMX count."""
    vnni = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n"
    assert "avx512_vnni" in cpu_flags(vnni)
    assert cpu_flags(vnni) & INT8_DOT_FLAGS
    assert not cpu_flags("flags\t: fpu sse2 avx2 avx512f\n") & INT8_DOT_FLAGS
    assert cpu_flags("Features\t: fp asimd\n") == frozenset()  # no x86 flags line
    assert isinstance(int8_dot_product(), bool)


def test_an_8_bit_file_that_disagrees_is_not_kept(tmp_path: Path) -> None:
    """Under the agreement bar (here 1.0: no 8-bit vector is exact) the export drops the
    8-bit file and queries run on the full weights; asked for none, none is written."""
    strict = OnnxMiniLMEmbedder(cache_dir=tmp_path, params=OnnxParams(weights8_min_cosine=1.0))
    assert strict.query_file == strict.model_file
    assert not weights8_file(strict.model_file).exists()
    assert list(tmp_path.iterdir()) == [strict.model_file]  # no partial file left behind
    full = OnnxMiniLMEmbedder(cache_dir=tmp_path, params=OnnxParams(query_weights_8bit=False))
    assert full.query_file == full.model_file


def test_only_one_short_text_is_embedded_inline(cache_dir: Path) -> None:
    """``inline``: one text of at most ``inline_chars`` characters (a recall's task) runs on
    the caller's loop; a longer text, a batch and a limit of 0 go to a worker thread."""
    embedder = OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams(inline_chars=40))
    assert embedder.inline(["rotate the staging api keys"])
    assert embedder.inline(["x" * 40])
    assert not embedder.inline(["x" * 41])
    assert not embedder.inline(["a", "b"])
    assert not embedder.inline([])
    never = OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams(inline_chars=0))
    assert not never.inline(["rotate the staging api keys"])


def test_the_export_is_reused_and_named_by_the_model(
    onnx: OnnxMiniLMEmbedder, cache_dir: Path
) -> None:
    """A second embedder loads the file the first exported (no second export)."""
    before = onnx.model_file.stat().st_mtime_ns
    other = OnnxMiniLMEmbedder(cache_dir=cache_dir, params=OnnxParams())
    assert other.model_file == onnx.model_file
    assert onnx.model_file.stat().st_mtime_ns == before
    assert onnx.model_file.name.startswith(MINILM_MODEL_NAME)
    assert onnx_model_file(Path(MiniLMEmbedder()._path), cache_dir) == onnx.model_file


def test_the_onnx_embedder_never_loads_torch(onnx: OnnxMiniLMEmbedder, cache_dir: Path) -> None:
    """The RSS lever: a process embedding with the exported model has no torch in it."""
    code = (
        "import sys; from lamarck.node.minilm_onnx import OnnxMiniLMEmbedder as E, OnnxParams; "
        f"E(cache_dir={str(cache_dir)!r}, params=OnnxParams()).embed(['a text']); "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"


def test_make_embedder_picks_onnx_and_torch_on_request(cache_dir: Path) -> None:
    """``minilm`` runs on onnxruntime when it can; ``runtime='torch'`` keeps the old path."""
    assert isinstance(
        make_embedder("minilm", cache_dir=cache_dir, onnx=OnnxParams()), OnnxMiniLMEmbedder
    )
    assert isinstance(make_embedder("minilm", runtime="torch", onnx=OnnxParams()), MiniLMEmbedder)
    with pytest.raises(ConfigError):
        make_embedder("minilm", runtime="tpu", onnx=OnnxParams())  # type: ignore[arg-type]


def test_make_embedder_runs_the_session_with_the_params_it_is_given(cache_dir: Path) -> None:
    """The daemon builds the embedder's params once (``EmbedderParams``) and passes them in."""
    params = OnnxParams(query_cache_size=7, spin_after_run=True)
    for embedder in (
        make_embedder("minilm", cache_dir=cache_dir, onnx=params),
        make_embedder("auto", cache_dir=cache_dir, onnx=params),
    ):
        assert isinstance(embedder, OnnxMiniLMEmbedder)
        assert embedder.params is params


@pytest.mark.parametrize(
    "field, value",
    [
        ("threads", -1),
        ("batch_size", 0),
        ("max_seq_length", 4),
        ("query_cache_size", True),
        ("export_timeout_s", float("nan")),
        ("export_timeout_s", 0.0),
        ("bulk_session", 1),
        ("spin_after_run", "no"),
        ("inline_chars", -1),
        ("query_weights_8bit", 1),
        ("bulk_weights", "int8"),
        ("weights8_min_cosine", 0.0),
        ("weights8_min_cosine", 1.5),
    ],
)
def test_onnx_params_refuse_unusable_values(field: str, value: object) -> None:
    """Every field is validated and the error names it."""
    with pytest.raises(ConfigError, match=field.split("_")[0]):
        OnnxParams(**{field: value})  # type: ignore[arg-type]
