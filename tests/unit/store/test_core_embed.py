"""The lesson service embeds off the event loop, except what the embedder has at hand and
what it embeds sooner than a worker thread could be handed it."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.domain.embedder import (
    Embedder,
    Vectors,
)
from lamarck.learning.params import LearningParams
from lamarck.learning.prompt import estimate_tokens
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.batch import BatchImportParams, PrimedEmbedder
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

    def inline(self, texts: Sequence[str]) -> bool:
        return list(texts) == ["quick"]


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


def test_a_text_the_embedder_calls_inline_is_embedded_on_the_loop() -> None:
    """``Embedder.inline``: one model call on the loop's own thread, no hand-off; a batch
    holding the same text still goes to a worker thread."""
    embedder = _Recording()
    core = _core(embedder)

    async def run() -> tuple[int, npt.NDArray[np.float32]]:
        quick = await core.embed("quick")
        await core.embed_many(["quick", "other"])
        return threading.get_ident(), quick

    loop_thread, quick = asyncio.run(run())
    np.testing.assert_allclose(quick, HashingEmbedder(dim=DIM).embed(["quick"])[0])
    assert embedder.threads[0] == loop_thread
    assert len(embedder.threads) == 2 and embedder.threads[1] != loop_thread


def test_the_hashing_embedder_embeds_one_text_inline() -> None:
    """Hashing one text costs less than a thread's hand-off; a batch does not go inline."""
    embedder = HashingEmbedder(dim=DIM)
    assert embedder.inline(["a lesson of any length " * 100])
    assert not embedder.inline(["a", "b"])


def test_the_nodes_primed_embedder_embeds_inline_what_its_model_would() -> None:
    """The daemon wraps its model in a ``PrimedEmbedder`` (catch-up's vectors computed
    ahead): the wrapper answers ``inline`` as the model does, so a recall's task is still
    embedded on the loop (before, the port's default sent every one to a worker thread)."""
    inner = _Recording()
    primed = PrimedEmbedder(inner, BatchImportParams())
    assert primed.inline(["quick"]) and not primed.inline(["slow"])
    core = _core(primed)

    async def run() -> int:
        await core.embed("quick")
        return threading.get_ident()

    loop_thread = asyncio.run(run())
    assert inner.threads == [loop_thread]


def test_the_primed_embedder_answers_every_port_method_as_its_model() -> None:
    """Every method and property the ``Embedder`` port gives a default for is the wrapper's
    own (it forwards to the model): a new one left to the port's default would silently turn
    off what the model does (as ``inline`` was)."""
    defaults = {
        name
        for name, member in vars(Embedder).items()
        if not name.startswith("_") and not getattr(member, "__isabstractmethod__", False)
    }
    assert {"inline", "computed", "bulk", "embed_bulk", "bulk_parallel"} <= defaults
    # ``embed_one`` is ``embed`` of one text: the wrapper's ``embed`` already forwards it.
    assert defaults - {"embed_one"} <= set(vars(PrimedEmbedder))
