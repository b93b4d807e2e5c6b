"""A lesson service over the in-memory store, with a tiny embedder and a clock: the harness the
store's unit tests share."""

from __future__ import annotations

import hashlib
import random
import re
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.learning.params import LearningParams
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome
from lamarck.reputation.transfer import TransferParams
from tests.factories import outcome_obj

P1, P2, P3 = "a1" * 32, "b2" * 32, "c3" * 32
ROOT, IN_TESTS, SUITE = "shell:pytest", "shell:pytest tests/", "the test suite"
DAY = 86_400.0


class TinyEmbedder:
    """Deterministic bag-of-words hashing: enough to make related texts similar."""

    dim = 64

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, 0] = 0.1  # never a zero vector
            for word in re.findall(r"\w+", text.lower()):
                slot = int(hashlib.sha256(word.encode()).hexdigest(), 16) % (self.dim - 1) + 1
                out[row, slot] += 1.0
            out[row] /= np.linalg.norm(out[row])
        return out


class Harness:
    """A service, its store and clock, and an outcome factory."""

    def __init__(self, params: LearningParams | None = None, embedder: Any = None) -> None:
        embedder = embedder or TinyEmbedder()
        self.store = InMemoryLessonStore(dim=embedder.dim)
        self.clock = FixedClock()
        self.service = LessonService(
            self.store,
            embedder,
            self.clock,
            params or LearningParams(),
            rng=random.Random(7),
            transfer=TransferParams(),
        )
        self._n = 0

    def outcome(
        self,
        session: str,
        steps: Sequence[tuple[str, str, str | None]],
        *,
        passed: bool = True,
        claim_ok: bool = True,
        project: str = P1,
        in_play: Sequence[str] = (),
        injected: bool = False,
        goal: str = "",
    ) -> Outcome:
        self._n += 1
        obj = outcome_obj(
            outcome_id=str(uuid.UUID(int=10_000 + self._n, version=4)),
            session_id=session,
            turn_index=self._n,
            project=project,
            goal_digest=goal or f"task {self._n}",
            steps=steps,
            created_at=self.clock.now(),
            passed=passed,
            claim_ok=claim_ok,
            in_play=list(in_play),
            injected_instruction=injected,
        )
        return Outcome.from_obj(obj)
