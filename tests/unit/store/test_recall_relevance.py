"""Recall has a relevance floor, and reports real scores.

With the real embedder (all-MiniLM-L6-v2, shipped offline) on real sentences: a query
unrelated to every lesson gets nothing and an empty prompt section; related queries find their
lesson, and what the section shows is relevant (its precision is measured and asserted). The
hashing embedder behaves sensibly on the same cases.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest

from lamarck.domain.embedder import Embedder
from lamarck.learning.params import LearningParams
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.lessons.service import LessonService
from lamarck.node.minilm_torch import MiniLMEmbedder, minilm_available
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.reputation.transfer import TransferParams
from tests.factories import lesson_row

LESSONS = {
    "pytest": "Run pytest from the repository root, not tests/: conftest.py lives at the root.",
    "push": "Use git push --force-with-lease instead of git push --force on shared branches.",
    "wheels": "Cache the pip wheels between CI runs; a cold install takes eight minutes.",
    "migrate": "Run the database migrations before restarting the api server after a deploy.",
    "branch": "Ask the user before deleting a git branch that has unmerged commits.",
    "npm": "Use npm ci rather than npm install in CI builds so the lockfile is respected.",
    "docker": "Build the docker image with --platform linux/amd64 on Apple silicon laptops.",
    "redis": "Start Redis on 127.0.0.1:6379 before running the integration tests.",
}
RELATED = {
    "run the test suite for this repo": "pytest",
    "the tests fail to import conftest": "pytest",
    "push my rebased branch to the remote": "push",
    "speed up the slow CI pipeline install step": "wheels",
    "deploy the api after changing the database schema": "migrate",
    "clean up the old feature branches": "branch",
    "install node dependencies in the build job": "npm",
    "build a container image on my M1 mac": "docker",
    "the integration tests cannot connect to redis": "redis",
}
UNRELATED = [
    "write a haiku about autumn leaves",
    "what is the capital of France",
    "recommend a good pasta recipe for dinner",
    "translate good morning into Spanish",
    "tell me a joke about cats",
    "plan a hiking trip in the mountains",
]
SESSION = "s"


def _service(embedder: Embedder) -> tuple[LessonService, InMemoryLessonStore]:
    store = InMemoryLessonStore(dim=embedder.dim)
    clock = FixedClock()
    service = LessonService(
        store, embedder, clock, LearningParams(), rng=random.Random(1), transfer=TransferParams()
    )
    return service, store


async def _load(store: InMemoryLessonStore, embedder: Embedder) -> None:
    now = FixedClock().now()
    vectors = embedder.embed(list(LESSONS.values()))
    await store.insert_lessons(
        [
            lesson_row(
                key,
                at=now,
                content=text,
                operation=f"op:{key}",
                confidence=0.8,
                evidence=(f"o-{key}",),
                embedding=np.asarray(vector, dtype=np.float32),
            )
            for (key, text), vector in zip(LESSONS.items(), vectors, strict=True)
        ]
    )


@pytest.fixture(scope="module")
def minilm() -> Iterator[Embedder]:
    if not minilm_available():
        pytest.fail("the embed extra (all-MiniLM-L6-v2) is not installed: make venv installs it")
    yield MiniLMEmbedder()


async def test_an_unrelated_query_gets_nothing_and_an_empty_section(minilm: Embedder) -> None:
    service, store = _service(minilm)
    await _load(store, minilm)
    for query in UNRELATED:
        result = await service.recall(query, None, "global", SESSION)
        assert result.lessons == (), query
        assert result.section.text == "", query


async def test_related_queries_find_their_lesson_and_the_section_is_precise(
    minilm: Embedder,
) -> None:
    service, store = _service(minilm)
    await _load(store, minilm)
    hits, shown, relevant_shown = 0, 0, 0
    for query, expected in RELATED.items():
        result = await service.recall(query, None, "global", SESSION)
        ids = [r.id for r in result.lessons]
        hits += expected in ids
        shown += len(ids)
        relevant_shown += ids.count(expected)
        # Real scores: similarity x context x confidence x recency, best first, in (0, 1].
        scores = [s.score for s in result.scored]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 < s <= 1.0 for s in scores)
        assert all(s.similarity >= service.params.lesson.min_similarity for s in result.scored)
    precision = relevant_shown / shown
    print(f"MiniLM recall: hit rate {hits}/{len(RELATED)}, section precision {precision:.2f}")
    assert hits >= len(RELATED) - 1
    assert precision >= 0.7  # 0.26 without the relative cut, 0.75 with it


async def test_the_hashing_embedder_keeps_shared_words_and_drops_the_haiku() -> None:
    embedder = HashingEmbedder()
    service, store = _service(embedder)
    await _load(store, embedder)
    haiku = await service.recall("write a haiku about autumn leaves", None, "global", SESSION)
    assert haiku.section.text == ""
    found = await service.recall("run pytest from the repository root", None, "global", SESSION)
    assert [r.id for r in found.lessons][:1] == ["pytest"]
