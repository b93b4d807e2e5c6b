"""`lamarck reputation [--json] [--sort] [--domain]`, `reputation show PEER` and `reputation
reset PEER --note` against an in-process node: OperatorService.GetReputation /
GetPeerReputation / ResetReputation on a real grpc.aio server over a reputation book, an
in-memory store (import tallies) and a registry's principals; the SDK's ``reputation()`` /
``peer_reputation()`` / ``reset_reputation()`` read the same.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import grpc.aio
import pytest
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.domain.rows import RejectionRow
from lamarck.errors import InvalidRecord, NotFound
from lamarck.node.api.interceptors import ErrorInterceptor
from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.api.reputation import NodeReputation, store_tallies
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.operator import OperatorClient
from lamarck.proto.clock import FixedClock
from lamarck.proto.v1 import operator_pb2_grpc
from lamarck.reputation.book import ReputationBook, TrustConfig
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams
from lamarck.reputation.scores import PeerBand
from lamarck.reputation.table import ReputationRow

T = TypeVar("T")
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SELF = "lmk1self"
ALICE, BOB, CAROL = "lmk1alice", "lmk1bob", "lmk1carol"
runner = CliRunner()


class MemoryTableBook:
    """The book's table and history in memory (``PostgresReputation``'s read side)."""

    def __init__(self, clock: FixedClock) -> None:
        trust = TrustConfig(SELF, PairwiseParams(), GlobalTrustParams(), ())
        self.book = ReputationBook(ReputationParams(), clock, trust)
        self._events: list[ReputationEvent] = []

    def emit(self, event: ReputationEvent) -> None:
        self.book.emit(event)
        self._events.append(event)

    def rows(
        self,
        *,
        principal_of: Mapping[str, str],
        accepted: Mapping[str, int] | None = None,
        rejected: Mapping[str, Mapping[str, int]] | None = None,
        peers: Sequence[str] = (),
    ) -> list[ReputationRow]:
        from lamarck.reputation.book import table_rows

        return table_rows(
            self.book, principal_of=principal_of, accepted=accepted, rejected=rejected, peers=peers
        )

    async def history(self, node_id: str, limit: int = 100) -> list[ReputationEvent]:
        return [e for e in reversed(self._events) if e.node_id == node_id][:limit]


@dataclass
class FakeNode:
    home: Path
    table: MemoryTableBook
    loop: asyncio.AbstractEventLoop
    address: str

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout=30)

    def cli(self, *args: str) -> Any:
        return runner.invoke(app, ["reputation", *args, "--home", str(self.home)])


def _history(table: MemoryTableBook) -> None:
    for k in range(9):
        table.emit(
            ReputationEvent(
                EventKind.LESSON_CONFIRMED,
                ALICE,
                NOW + timedelta(minutes=k),
                weight=0.9,
                domain="postgres",
                detail=f"outcome o{k} passed",
            )
        )
    for k in range(3):
        table.emit(
            ReputationEvent(
                EventKind.LESSON_CONTRADICTED,
                BOB,
                NOW + timedelta(minutes=k),
                detail=f"outcome b{k} failed",
            )
        )
    table.emit(
        ReputationEvent(
            EventKind.POISONED, BOB, NOW, record_hash="ab" * 32, detail="injected instruction"
        )
    )
    table.book.recompute_global_trust(NOW)


def _no_pipeline() -> ImportPipeline:
    raise AssertionError("the reputation RPCs import nothing")


@pytest.fixture
def node(tmp_path: Path) -> Iterator[FakeNode]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    clock = FixedClock(NOW + timedelta(hours=1))
    store = InMemoryLessonStore(dim=8)
    table = MemoryTableBook(clock)
    _history(table)

    async def principals(ids: Sequence[str]) -> dict[str, str]:
        known = {ALICE: "operator-key", BOB: ALICE}
        return {i: known[i] for i in ids if i in known}

    async def peers() -> list[str]:
        return [CAROL]

    async def start() -> tuple[grpc.aio.Server, int]:
        await store.record_rejection(RejectionRow(BOB, "injected_instruction", "h1", NOW))
        await store.record_rejection(RejectionRow(BOB, "bad_signature", "h2", NOW))
        source = NodeReputation(
            table,
            principals=lambda: principals,
            peers=peers,
            tallies=lambda: store_tallies(store),
        )
        servicer = OperatorServicer(
            store,
            clock,
            pipeline=_no_pipeline,
            node_id=SELF,
            reputation=lambda: source,
            sink=lambda: table,
        )
        server = grpc.aio.server(interceptors=[ErrorInterceptor()])
        operator_pb2_grpc.add_OperatorServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    fake = FakeNode(tmp_path, table, loop, "")
    server, port = fake.run(start())
    fake.address = f"127.0.0.1:{port}"
    info = {"pid": os.getpid(), "agent_listen": fake.address}
    (tmp_path / "node.json").write_text(json.dumps(info), encoding="utf-8")
    try:
        yield fake
    finally:
        fake.run(server.stop(None))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def test_the_wide_table_prints_every_peer_with_its_columns(node: FakeNode) -> None:
    result = node.cli("--wide")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("PEER") and "PRINCIPAL" in lines[0] and "GLOBAL" in lines[0]
    # Sorted by score: alice (confirmed) first, bob (graylisted) last.
    assert [line.split()[0] for line in lines[1:4]] == [ALICE, CAROL, BOB]
    assert "graylisted" in lines[3] and "injected_instruction:1" in lines[3]
    assert "operator-key" in lines[1] and "postgres" in lines[1]
    assert "3 peers as seen by lmk1self" in result.stdout
    # Carol is live but nobody has judged her: unknown, never 0.
    assert "unknown" in lines[2] and "unknown" not in lines[1]


def test_the_default_table_fits_120_columns_with_fleet_labels_and_named_parts(
    node: FakeNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = node.home / "fleet"
    fleet.mkdir()
    nodes = [{"name": "node2", "home": str(fleet), "node_id": BOB}]
    (fleet / "fleet.json").write_text(json.dumps({"supervisor_pid": os.getpid(), "nodes": nodes}))
    monkeypatch.setenv("LAMARCK_FLEET_DIR", str(fleet))
    result = node.cli()
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= 120 for line in lines), result.stdout
    assert "PRINCIPAL" not in lines[0] and "TOP PARTS" in lines[0]
    [bob] = [line for line in lines if "graylisted" in line]
    assert bob.startswith("node2 lmk1bob") and "poisoned -" in bob and "p5=" not in bob
    assert "--wide: every column" in result.stdout
    # show takes the label, and prints rounded numbers and named parts.
    shown = node.cli("show", "node2")
    assert shown.exit_code == 0, shown.stderr
    assert "node2 lmk1bob" in shown.stdout and "poisoned -" in shown.stdout
    assert not re.search(r"\d\.\d{5,}", shown.stdout), shown.stdout


def test_show_takes_the_start_of_an_id_as_the_table_prints_it(node: FakeNode) -> None:
    shown = node.cli("show", "lmk1ca…")
    assert shown.exit_code == 0, shown.stderr
    assert CAROL in shown.stdout
    ambiguous = node.cli("show", "lmk1")
    assert ambiguous.exit_code == 1 and "starts 3 peers' ids" in ambiguous.stderr


def test_the_json_table_is_one_document_sorted_and_filtered_as_asked(node: FakeNode) -> None:
    result = node.cli("--json", "--sort", "peer")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["observer_node_id"] == SELF and doc["global_trust_computed_at"]
    assert [p["peer"] for p in doc["peers"]] == [ALICE, BOB, CAROL]
    alice, bob, carol = doc["peers"]
    assert (alice["predictions"], alice["correct"], alice["expert_domains"]) == (9, 9, ["postgres"])
    assert alice["global_trust"] > 0.0 and alice["pairwise_trust"] > 0.5
    assert bob["band"] == "graylisted" and bob["principal"] == ALICE
    assert bob["records_rejected"] == {"injected_instruction": 1, "bad_signature": 1}
    assert bob["weighted_accuracy"] == 0.0 and carol["weighted_accuracy"] is None
    assert bob["global_trust"] == 0.0 and carol["global_trust"] is None
    only = json.loads(node.cli("--json", "--domain", "postgres").stdout)
    assert [p["peer"] for p in only["peers"]] == [ALICE]


def test_show_prints_a_peers_events_with_their_reasons(node: FakeNode) -> None:
    result = node.cli("show", BOB)
    assert result.exit_code == 0, result.stderr
    assert "injected instruction" in result.stdout and "outcome b2 failed" in result.stdout
    doc = json.loads(node.cli("show", BOB, "--json", "--limit", "2").stdout)
    assert doc["band"] == "graylisted"
    assert [(e["kind"], e["source"]) for e in doc["events"]] == [
        ("poisoned", "protocol"),
        ("lesson_contradicted", "reality"),
    ]


def test_show_of_a_peer_nobody_knows_is_not_found(node: FakeNode) -> None:
    result = node.cli("show", "lmk1nobody")
    assert result.exit_code == 1
    assert "not_found" in result.stderr


def test_an_unknown_sort_key_is_refused_by_the_node(node: FakeNode) -> None:
    with OperatorClient(node.address) as op, pytest.raises(InvalidRecord) as e:
        op.reputation("loudest")
    assert e.value.reason == "bad_sort"


def test_the_sdk_reads_the_same_table_and_history(node: FakeNode) -> None:
    with OperatorClient(node.address) as op:
        table = op.reputation("global")
        shown = op.peer_reputation(ALICE, limit=3)
        with pytest.raises(NotFound):
            op.peer_reputation("lmk1nobody")
    assert table.rows[0].peer == ALICE and table.rows[0].band is PeerBand.NEUTRAL
    assert [r.global_trust is None for r in table.rows] == [False, False, True]
    assert table.global_trust_computed_at == NOW
    assert shown.row.expert_domains == ("postgres",)
    assert [e.detail for e in shown.events] == [
        "outcome o8 passed",
        "outcome o7 passed",
        "outcome o6 passed",
    ]


def test_reset_lifts_a_graylisting_and_keeps_the_note_in_the_peer_s_history(
    node: FakeNode,
) -> None:
    before = json.loads(node.cli("show", BOB, "--json").stdout)
    assert before["band"] == "graylisted"
    result = node.cli("reset", BOB, "--note", "its operator rotated a leaked key")
    assert result.exit_code == 0, result.stderr
    assert f"reset {BOB}: score 0.500, band neutral" in result.stdout
    after = json.loads(node.cli("show", BOB, "--json").stdout)
    assert after["band"] == "neutral" and after["score"] == pytest.approx(0.5)
    newest = after["events"][0]
    assert (newest["kind"], newest["source"]) == ("operator_reset", "operator")
    assert newest["detail"] == "operator reset: its operator rotated a leaked key"
    # Nothing of what reality judged is erased: the earlier events and counts stay.
    assert [e["kind"] for e in after["events"][1:]] == [e["kind"] for e in before["events"]]
    assert (after["predictions"], after["correct"]) == (3, 0)


def test_reset_needs_a_note_and_a_known_peer(node: FakeNode) -> None:
    missing = node.cli("reset", BOB)
    assert missing.exit_code != 0 and "--note" in missing.stderr
    blank = node.cli("reset", BOB, "--note", "  ")
    assert blank.exit_code == 1 and "missing_note" in blank.stderr
    unknown = node.cli("reset", "lmk1nobody", "--note", "why not")
    assert unknown.exit_code == 1 and "not_found" in unknown.stderr
    with OperatorClient(node.address) as op:
        assert op.peer_reputation(BOB).row.band is PeerBand.GRAYLISTED
        done = op.reset_reputation(BOB, note="reviewed")
    assert done.row.band is PeerBand.NEUTRAL
    assert [e.kind for e in done.events] == ["operator_reset"]
