"""One NodeParams built from the settings; reality events are never dropped
because the network side has not started yet."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.learning.params import LearningParams
from lamarck.node.api.agent_service import make_agent_servicer
from lamarck.node.api.network_side import NetworkSide
from lamarck.node.api.ready import Ready
from lamarck.node.config import load_settings
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.lessons.service import LessonService
from lamarck.node.params import node_params
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.port import LessonStore
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S
from lamarck.registry.rules import PinReason, pin_decision
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.port import InMemoryReputation, ReputationSink
from lamarck.reputation.transfer import TransferParams

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_one_skew_setting_reaches_every_reader(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path, max_future_skew_s=42.0, publish_threshold=0.7)
    params = node_params(settings)
    assert params.importing.max_future_skew_s == 42.0
    assert params.registry.max_future_skew_s == 42.0
    assert params.gossip.publish_threshold == 0.7
    # The pieces are shared, not rebuilt: the import decision reads the book's thresholds.
    assert params.importing.reputation is params.reputation
    assert params.importing.transfer is params.transfer
    assert params.importing.evidence.confidence is params.learning.confidence


def test_the_default_skew_lives_in_one_place(tmp_path: Path) -> None:
    params = node_params(load_settings(home=tmp_path))
    assert params.importing.max_future_skew_s == DEFAULT_MAX_FUTURE_SKEW_S
    assert params.registry.max_future_skew_s == DEFAULT_MAX_FUTURE_SKEW_S


def test_a_setting_nothing_reads_is_gone(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="bootstrap"):
        load_settings(home=tmp_path, bootstrap=("10.0.0.1:7700",))


async def test_a_reality_event_before_sharing_starts_lands_in_the_book(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path)
    params = node_params(settings)
    clock = FixedClock(NOW)
    # The parts the daemon publishes once its store is ready, the book among them.
    store_ready = Ready[LessonStore]("the node")
    lessons_ready = Ready[LessonService]("the node")
    network = Ready[NetworkSide]("sharing")
    book_ready = Ready[ReputationSink]("the reputation book")
    servicer = make_agent_servicer(
        NodeIdentity.generate(),
        clock,
        HashingEmbedder(dim=16),
        store=store_ready,
        lessons=lessons_ready,
        network=network,
        book=book_ready,
    )
    book = InMemoryReputation(params.reputation, clock)
    store = InMemoryLessonStore(dim=16)
    book_ready.set(book)
    lessons_ready.set(
        LessonService(
            store, HashingEmbedder(dim=16), clock, LearningParams(), transfer=TransferParams()
        )
    )
    store_ready.set(store)
    assert network.peek() is None  # the network side has not started
    sink = servicer._sink()
    assert sink is book
    source = NodeIdentity.generate().node_id
    before = book.score(source)
    sink.emit(ReputationEvent(kind=EventKind.LESSON_CONFIRMED, node_id=source, at=NOW))
    assert book.score(source) > before


def test_the_pin_decision_names_each_refusal() -> None:
    assert pin_decision("n", "k", revoked=False, pinned="k") is None
    assert pin_decision("n", "k", revoked=True, pinned="k") == (
        PinReason.REVOKED_SOURCE,
        "n is revoked",
    )
    assert pin_decision("n", "k", revoked=False, pinned=None)[0] is PinReason.UNREGISTERED_SOURCE  # type: ignore[index]
    assert pin_decision("n", "k", revoked=False, pinned="j")[0] is PinReason.KEY_NOT_PINNED  # type: ignore[index]
