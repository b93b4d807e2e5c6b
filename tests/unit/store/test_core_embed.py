"""The lesson service embeds off the event loop, except what the embedder has at hand."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.node.embedding import HashingEmbedder, Vectors
from lamarck.node.learning.params import LearningParams
from lamarck.node.learning.prompt import estimate_tokens
from lamarck.node.lessons.core import EmbedderLike, LessonCore
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.reputation.transfer import TransferParams

DIM = 16


class _Recording(HashingEmbedder):
    """Records the thread of each model call; one text is at hand."""

    def __init__(self) -> None:
        super().__init__(dim=DIM)
        self.threads: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.threads.append(threading.get_ident())
        return super().embed(texts)

    def computed(self, texts: Sequence[str]) -> Vectors | None:
        return HashingEmbedder.embed(self, texts) if list(texts) == ["asked before"] else None


class _DuckTyped:
    """An embedder with no ``computed``: only what ``EmbedderLike`` asks."""

    dim = DIM

    def embed(self, texts: Any) -> npt.NDArray[np.float32]:
        return np.ones((len(texts), DIM), dtype=np.float32) / 4.0


def _core(embedder: EmbedderLike) -> LessonCore:
    return LessonCore(
        InMemoryLessonStore(dim=DIM),
        embedder,
        FixedClock(),
        LearningParams(),
        rng=random.Random(5),
        token_counter=estimate_tokens,
        transfer=TransferParams(),
    )


def test_a_vector_at_hand_is_taken_on_the_loop_and_the_rest_off_it() -> None:
    embedder = _Recording()
    core = _core(embedder)

    async def run() -> tuple[int, npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        at_hand = await core.embed("asked before")
        fresh = await core.embed("never asked")
        return threading.get_ident(), at_hand, fresh

    loop_thread, at_hand, fresh = asyncio.run(run())
    np.testing.assert_allclose(at_hand, HashingEmbedder(dim=DIM).embed(["asked before"])[0])
    np.testing.assert_allclose(fresh, HashingEmbedder(dim=DIM).embed(["never asked"])[0])
    # One model call, for the text not at hand, on a worker thread.
    assert len(embedder.threads) == 1 and embedder.threads[0] != loop_thread


def test_an_embedder_without_vectors_at_hand_still_embeds() -> None:
    vectors = asyncio.run(_core(_DuckTyped()).embed_many(["a", "b"]))
    assert vectors.shape == (2, DIM)
    np.testing.assert_allclose(vectors, 0.25)
