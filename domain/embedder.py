"""The ``Embedder`` contract: texts in, L2-normalised float32 vectors of a fixed dimension out.

Its adapters (the ONNX and torch MiniLM models, the hashing embedder) live in ``embedding.py``;
the rules that read vectors (the autonomy filter, recall) need only this contract.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vectors"]

Vectors = npt.NDArray[np.float32]


class Embedder(abc.ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Identifies the vector space: vectors of different names are not comparable."""

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """Number of dimensions of every vector."""

    @abc.abstractmethod
    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``: float32 array of shape ``(len(texts), dim)``, unit-length rows."""

    def embed_one(self, text: str) -> Vectors:
        """Embed a single text: float32 array of shape ``(dim,)``."""
        row: Vectors = self.embed([text])[0]
        return row

    def bulk(self) -> contextlib.AbstractContextManager[object]:
        """A long run of batches (a catch-up): inside, ``embed_bulk`` may use a set-up
        suited to throughput beside other work. Blocks may overlap. Nothing by default."""
        return contextlib.nullcontext()

    def embed_bulk(self, texts: Sequence[str]) -> Vectors:
        """``embed`` for a batch of a long run: the same vectors (``bulk``)."""
        return self.embed(texts)

    @property
    def bulk_parallel(self) -> int:
        """How many ``embed_bulk`` calls a long run should keep going at once inside
        ``bulk()`` (each on its own thread). 1 by default: one batch at a time."""
        return 1

    def computed(self, texts: Sequence[str]) -> Vectors | None:
        """``embed(texts)`` when every vector is already at hand (no model call: cheap
        enough for the event loop), else None. None by default."""
        del texts
        return None

    def inline(self, texts: Sequence[str]) -> bool:
        """Whether ``embed(texts)`` costs less than the hand-off of a worker thread, so a
        caller on an event loop runs it there. False by default: a model run stays off the
        loop."""
        del texts
        return False
