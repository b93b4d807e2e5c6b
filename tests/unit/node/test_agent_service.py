"""AgentService over LessonService + the in-memory store, through a real in-process gRPC server.

Every call goes over a loopback channel (grpc.aio server on 127.0.0.1:0 with the node's
ErrorInterceptor), so the proto translation, the error mapping and the SDK's typed results are
all exercised; nothing of gRPC is mocked.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest

from lamarck.client import AsyncClient, Client
from lamarck.domain.rows import LessonFilter
from lamarck.errors import (
    ConflictError,
    InvalidRecord,
    LamarckError,
    NotFound,
    SecretDetected,
)
from lamarck.gossip.publisher import lesson_version
from lamarck.learning.params import LearningParams
from lamarck.learning.scopes import project_scope
from lamarck.learning.write_behind import WriteBehindParams
from lamarck.node.api.peer_handlers import PublishDeps, handle_publish
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import DEFAULT_LIMITS
from lamarck.proto.outcome import Outcome
from lamarck.proto.signed import SignedMemory
from lamarck.proto.v1 import agent_pb2, lessons_pb2, peer_pb2, records_pb2
from tests.unit.node.agent_node import (
    BAD,
    CONTEXT,
    GOOD,
    TARGET,
    Node,
    learn,
    start_node,
)

PROJECT = "a1" * 32
# -- RecordOutcome, Recall, attribution -----------------------------------------------------


async def test_mechanical_outcome_teaches_a_lesson_that_recall_shows(node: Node) -> None:
    result = await node.client.record_outcome(
        node.outcome("s1", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    assert not result.duplicate
    [change] = result.changes
    assert change.kind == "created" and change.status == "active" and change.version == 1
    assert change.confidence_before == 0.0 and change.confidence_after == 0.5

    recalled = await node.client.recall(
        "run the test suite", CONTEXT, session_id="s2", project_digest=PROJECT
    )
    [lesson] = recalled.lessons
    assert lesson.id == change.lesson_id and lesson.operation == GOOD
    assert lesson.status == "active" and lesson.origin == "local"
    assert lesson.scope == project_scope(PROJECT) and lesson.category == "operation"
    assert lesson.source_node_id == node.identity.node_id
    assert lesson.evidence_outcome_ids == (result.outcome_id,)
    assert recalled.section.startswith(
        "Lessons:\n- [proven here, confidence 0.50] Prefer `shell:pytest`"
    )
    # A real score (similarity x context x confidence x recency), not a rank position.
    [score] = recalled.scores
    assert 0.0 < score < 1.0
    assert lesson.record["lesson"] == {
        "operation": GOOD,
        "scope": project_scope(PROJECT),
        "status": "active",
        # The record version is the one encoder's (publisher.lesson_version), not the view's.
        "version": lesson_version(await node.store.get_lesson(lesson.id)),
    }


async def test_a_recall_says_how_many_lessons_just_taught_are_still_being_indexed() -> None:
    # The taught lesson's vector is written behind the reply (the drain lingers) and this
    # node's recall embeds none itself: it searches what is indexed and says one waits.
    behind = WriteBehindParams(
        defer_learned_embedding=True, linger_s=600.0, recall_settles_at_most=0
    )
    node = await start_node(3, learning=LearningParams(write_behind=behind))
    try:
        await learn(node)
        recalled = await node.client.recall(
            "run the test suite", CONTEXT, session_id="s2", project_digest=PROJECT
        )
        assert recalled.lessons == () and recalled.indexing == 1
    finally:
        await node.client.close()
        await node.server.stop(None)


async def test_recall_marks_lessons_in_play_so_outcomes_confirm_and_contradict_them(
    node: Node,
) -> None:
    lesson_id = await learn(node)
    await node.client.recall("run the test suite", CONTEXT, session_id="s2", project_digest=PROJECT)
    confirmed = await node.client.record_outcome(node.outcome("s2", [(GOOD, "ok", TARGET)]))
    assert confirmed.ids("confirmed") == [lesson_id]
    up = confirmed.changes[0]
    assert up.confidence_after > up.confidence_before == 0.5

    await node.client.recall("run the test suite", CONTEXT, session_id="s3", project_digest=PROJECT)
    contradicted = await node.client.record_outcome(
        node.outcome("s3", [(GOOD, "failed", TARGET)], passed=False)
    )
    assert contradicted.ids("contradicted") == [lesson_id]
    down = contradicted.changes[0]
    assert down.confidence_after < down.confidence_before == up.confidence_after


async def test_a_resent_outcome_is_acknowledged_as_duplicate_and_changes_nothing(
    node: Node,
) -> None:
    outcome = node.outcome("s1", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    first = await node.client.record_outcome(outcome)
    again = await node.client.record_outcome(outcome)
    assert first.changes and not first.duplicate
    assert again.duplicate and again.changes == () and again.outcome_id == first.outcome_id
    assert len((await node.client.list_lessons()).lessons) == 1


async def test_sdk_accepts_an_outcome_model(node: Node) -> None:
    model = Outcome.from_obj(node.outcome("s1", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)]))
    assert (await node.client.record_outcome(model)).outcome_id == model.id


async def test_malformed_outcome_is_invalid_argument_with_reason(node: Node) -> None:
    optimistic = node.outcome("s1", [(GOOD, "ok", TARGET)], passed=True)
    optimistic["checks"][0]["failed"] = True
    with pytest.raises(InvalidRecord) as info:
        await node.client.record_outcome(optimistic)
    assert info.value.reason == "optimistic_outcome"
    with pytest.raises(grpc.aio.AioRpcError) as raw:
        await node.stub.RecordOutcome(agent_pb2.RecordOutcomeRequest(outcome_json=b"{not json"))
    assert raw.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert ("lamarck-reason", "malformed") in tuple(raw.value.trailing_metadata() or ())


async def test_secret_in_an_outcome_or_claim_raises_secret_detected_on_the_client(
    node: Node,
) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    with pytest.raises(SecretDetected) as info:
        await node.client.remember(f"Use the key {key} to deploy.", "shell:deploy")
    assert info.value.reason == "secret_detected"
    with pytest.raises(SecretDetected):
        await node.client.record_outcome(
            node.outcome("s1", [(f"shell:deploy --key {key}", "ok", TARGET)])
        )
    assert (await node.client.list_lessons()).lessons == ()


async def test_recall_limit_and_empty_task(node: Node) -> None:
    await learn(node)
    none = await node.client.recall(
        "run the test suite", session_id="s", project_digest=PROJECT, limit=5
    )
    assert len(none.lessons) == 1
    with pytest.raises(InvalidRecord) as info:
        await node.client.recall("   ")
    assert info.value.reason == "empty_task"


async def test_recall_without_project_sees_only_global_lessons(node: Node) -> None:
    await learn(node)
    recalled = await node.client.recall("run the test suite", session_id="s2")
    assert recalled.lessons == () and recalled.section == ""


# -- CheckOperation, Remember, ReportUse ------------------------------------------------------


async def test_check_operation_puts_the_lesson_on_file_before_the_avoided_operation(
    node: Node,
) -> None:
    lesson_id = await learn(node)
    check = await node.client.check_operation(BAD, session_id="s2", project_digest=PROJECT)
    assert lesson_id in check.lesson_ids
    assert f"`{BAD}`" in check.preamble and "Prefer" in check.preamble
    nothing = await node.client.check_operation("shell:ls", project_digest=PROJECT)
    assert nothing.preamble == "" and nothing.lesson_ids == ()


async def test_the_sdk_shows_each_lessons_evidence_and_an_import_is_never_advice(
    node: Node, other: Node
) -> None:
    lesson_id = await learn(node)
    check = await node.client.check_operation(BAD, project_digest=PROJECT)
    [advice] = check.lessons
    assert advice.id == lesson_id and advice.evidence.evidence_class == "proven_here"
    assert advice.evidence.label == "proven here, confidence 0.50" and advice.evidence.decides
    assert f"A lesson on file for `{BAD}` (proven here, confidence 0.50)" in check.preamble
    [listed] = (await node.client.list_lessons()).lessons
    assert listed.evidence.evidence_class == "proven_here" and listed.evidence.peers == 0
    # The same lesson imported by a second node: unverified there, never its advice.
    await other.client.import_bundle(await node.client.export_bundle(statuses="active"))
    [imported] = (await other.client.list_lessons(origin="imported")).lessons
    assert imported.evidence.evidence_class == "unverified" and not imported.evidence.decides
    assert (
        imported.evidence.label == f"unverified, from 1 peer, confidence {imported.confidence:.2f}"
    )
    assert (await other.client.get_lesson(imported.id)).evidence == imported.evidence
    assert await other.store.list_lessons(LessonFilter(about=BAD)), "on file there"
    on_other = await other.client.check_operation(BAD, project_digest=PROJECT)
    assert on_other.lessons == () and on_other.preamble == "" and on_other.lesson_ids == ()


async def test_remember_stores_a_claim_that_is_never_recalled(node: Node) -> None:
    made = await node.client.remember(
        "Run the linters before the tests.", "shell:ruff", tags=["style"], context=CONTEXT
    )
    assert made.created and made.lesson.status == "claimed" and made.lesson.confidence == 0.3
    assert made.lesson.scope == "global" and made.lesson.tags == ("style",)
    assert made.lesson.evidence_outcome_ids == ()
    again = await node.client.remember("Run the linters before the tests.", "shell:ruff")
    assert not again.created and again.lesson.id == made.lesson.id
    recalled = await node.client.recall("run the linters before the tests", session_id="s")
    assert recalled.lessons == ()
    with pytest.raises(grpc.aio.AioRpcError) as raw:
        await node.stub.Remember(
            agent_pb2.RememberRequest(
                content="x", operation="y", memory_type=lessons_pb2.MEMORY_TYPE_UC
            )
        )
    assert raw.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_report_use_is_all_or_nothing_on_unknown_ids(node: Node) -> None:
    lesson_id = await learn(node)
    assert await node.client.report_use("s2", [lesson_id]) == 1
    assert (await node.store.get_lesson(lesson_id)).use_count == 1
    with pytest.raises(NotFound):
        await node.client.report_use("s2", [lesson_id, str(uuid.uuid4())])
    assert (await node.store.get_lesson(lesson_id)).use_count == 1
    assert await node.client.report_use("s2", [lesson_id], applied=False) == 1
    assert (await node.store.get_lesson(lesson_id)).use_count == 1
    # Applied in session s2: that session's outcome is attributed to it.
    assert await node.client.report_use("s2", [lesson_id]) == 1
    confirmed = await node.client.record_outcome(node.outcome("s2", [(GOOD, "ok", TARGET)]))
    assert confirmed.ids("confirmed") == [lesson_id]


# -- Edit, Retire, History, List --------------------------------------------------------------


async def test_edit_retire_and_history_show_the_whole_chain(node: Node) -> None:
    lesson_id = await learn(node)
    edited = await node.client.edit(
        lesson_id, "Run pytest from the repository root.", expected_version=1
    )
    assert edited.version == 2 and edited.content == "Run pytest from the repository root."
    assert edited.confidence == 0.5 and edited.status == "active"
    with pytest.raises(ConflictError) as stale:
        await node.client.edit(lesson_id, "Something else.", expected_version=1)
    assert stale.value.reason == "version_conflict"
    with pytest.raises(ConflictError):
        await node.client.retire(edited.id, expected_version=1)
    retired = await node.client.retire(edited.id, reason="no longer true", expected_version=2)
    assert retired.status == "retired" and retired.superseded_by == "retired:agent"

    history = await node.client.history(lesson_id)
    assert [(e.kind, e.version, e.status) for e in history] == [
        ("created", 1, "superseded"),
        ("superseded", 1, "superseded"),
        ("edited", 2, "retired"),
        ("retired", 2, "retired"),
    ]
    assert history[0].outcome_id and history[3].actor == "agent"
    assert json.loads(history[2].record_json)["content"] == edited.content
    assert await node.client.history(edited.id) == history
    with pytest.raises(NotFound):
        await node.client.history(str(uuid.uuid4()))
    with pytest.raises(grpc.aio.AioRpcError) as raw:
        await node.stub.Edit(agent_pb2.EditRequest(lesson_id=lesson_id, operation="x"))
    assert ("lamarck-reason", "field_not_editable") in tuple(raw.value.trailing_metadata() or ())


async def test_history_is_the_event_log_with_actor_reason_and_confidence_before_and_after(
    node: Node,
) -> None:
    lesson_id = await learn(node)
    await node.client.recall("run the test suite", CONTEXT, session_id="s2", project_digest=PROJECT)
    await node.client.record_outcome(node.outcome("s2", [(GOOD, "ok", TARGET)]))
    edited = await node.client.edit(lesson_id, "Run pytest from the root.", reason="clearer")
    await node.client.retire(edited.id, reason="no longer true")
    history = await node.client.history(edited.id)
    assert [(e.kind, e.actor) for e in history] == [
        ("created", "loop"),
        ("confirmed", "loop"),
        ("superseded", "agent"),
        ("edited", "agent"),
        ("retired", "agent"),
    ]
    created, confirmed, superseded, edit, retired = history
    assert (created.confidence_before, created.confidence) == (0.0, 0.5)
    assert confirmed.confidence_before == 0.5 < confirmed.confidence
    assert confirmed.outcome_id and confirmed.reason.startswith("similarity=")
    assert superseded.reason == edited.id
    assert (edit.reason, edit.version) == ("clearer", 2)
    assert (retired.reason, retired.status) == ("no longer true", "retired")
    assert retired.confidence_before == retired.confidence == confirmed.confidence


async def test_set_access_shares_a_lesson_privately_and_back_without_a_new_version(
    node: Node,
) -> None:
    lesson_id = await learn(node)
    peer = "lmk1" + "p" * 32
    private = await node.client.set_access(lesson_id, "private", [peer])
    assert (private.id, private.version) == (lesson_id, 1)
    assert (private.access_level, private.recipients) == ("private", (peer,))
    public = await node.client.set_access(lesson_id, "public")
    assert (public.access_level, public.recipients) == ("public", ())
    with pytest.raises(InvalidRecord) as err:
        await node.client.set_access(lesson_id, "private")
    assert err.value.reason == "no_recipients"
    with pytest.raises(grpc.aio.AioRpcError) as raw:
        await node.stub.Edit(agent_pb2.EditRequest(lesson_id=lesson_id, recipients=[peer]))
    assert ("lamarck-reason", "recipients_need_private") in tuple(
        raw.value.trailing_metadata() or ()
    )


async def test_list_filters_by_status_scope_category_confidence_and_pages(node: Node) -> None:
    learned = await learn(node)
    claims = [
        (await node.client.remember(f"Claim number {i} about tooling.", f"shell:tool{i}")).lesson.id
        for i in range(3)
    ]
    everything = await node.client.list_lessons()
    assert everything.lessons[0].id == learned  # confidence first
    assert {x.id for x in everything.lessons} == {learned, *claims}
    active = await node.client.list_lessons(statuses="active")
    assert [x.id for x in active.lessons] == [learned]
    assert (await node.client.list_lessons(min_confidence=0.4)).lessons == active.lessons
    global_ = await node.client.list_lessons(scope="global")
    assert {x.id for x in global_.lessons} == set(claims)
    assert (await node.client.list_lessons(category="situation")).lessons == ()
    assert (await node.client.list_lessons(origin="imported")).lessons == ()
    assert len((await node.client.list_lessons(operation=GOOD)).lessons) == 1

    seen: list[str] = []
    token = ""
    while True:
        page = await node.client.list_lessons(page_size=2, page_token=token)
        assert len(page.lessons) <= 2
        seen.extend(x.id for x in page.lessons)
        token = page.next_page_token
        if not token:
            break
    assert seen == [x.id for x in everything.lessons]
    with pytest.raises(InvalidRecord) as info:
        await node.client.list_lessons(page_token="nope")
    assert info.value.reason == "bad_page_token"
    with pytest.raises(InvalidRecord):
        await node.client.list_lessons(scope="project:/home/me")


# -- Export / Import --------------------------------------------------------------------------


async def test_export_is_one_canonical_signed_record_per_line(node: Node) -> None:
    lesson_id = await learn(node)
    await node.client.remember("Prefer small commits.", "git:commit")
    bundle = await node.client.export_bundle()
    lines = bundle.splitlines()
    assert bundle.endswith(b"\n") and len(lines) == 2
    for line in lines:
        signed = SignedMemory.from_json(line)
        signed.verify(node.clock.now())
        assert canonical_bytes(json.loads(line)) == line
        assert signed.source_agent_id == node.identity.node_id
    first = SignedMemory.from_json(lines[0]).memory
    assert first.id == lesson_id and first.lesson is not None and first.lesson.status == "active"
    assert [e.outcome_id for e in first.evidence] != [None]
    only_active = await node.client.export_bundle(statuses=["active"])
    assert only_active.splitlines() == [lines[0]]


async def test_import_round_trips_into_a_second_node(node: Node, other: Node) -> None:
    lesson_id = await learn(node)
    bundle = await node.client.export_bundle(statuses="active")
    result = await other.client.import_bundle(bundle, source_label="backup.jsonl")
    [ack] = result.acks
    assert ack.status == "accepted" and ack.index == 0 and ack.reason == ""
    [imported] = (await other.client.list_lessons(origin="imported")).lessons
    assert json.loads(imported.record_json)["id"] == lesson_id
    assert imported.origin == "imported"
    assert imported.source_node_id == node.identity.node_id
    assert imported.imported_from == (node.identity.node_id,)
    assert imported.original_confidence == 0.5 and imported.confidence < 0.5
    assert imported.record_json == bundle.rstrip(b"\n")
    # The same bundle again: nothing new.
    again = await other.client.import_bundle(bundle)
    assert [a.status for a in again.acks] == ["duplicate"]
    # Its own export coming back to the first node is a duplicate, not a conflict.
    home = await node.client.import_bundle(bundle)
    assert [a.status for a in home.acks] == ["duplicate"]
    # And the second node's export carries the first node's signed bytes unchanged.
    assert await other.client.export_bundle() == bundle


async def test_a_bad_line_is_refused_with_its_reason_and_loses_nothing(
    node: Node, other: Node
) -> None:
    await learn(node)
    again = await node.client.record_outcome(
        node.outcome("s9", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    assert again.ids("confirmed") and not again.ids("created")  # still one line
    await node.client.record_outcome(
        node.outcome("s5", [("shell:make", "failed", "docs"), ("shell:sphinx", "ok", "docs")])
    )
    good = (await node.client.export_bundle(statuses="active")).splitlines()
    assert len(good) == 2
    tampered = good[1].replace(b"Prefer", b"Avoid", 1)
    bundle = b"\n".join([good[0], b"", b"{not json", tampered, good[1]]) + b"\n"
    dry = await other.client.import_bundle(bundle, dry_run=True)
    assert (await other.client.list_lessons()).lessons == ()
    result = await other.client.import_bundle(bundle)
    assert dry == result
    assert [(a.index, a.status, a.reason) for a in result.acks] == [
        (0, "accepted", ""),
        (2, "rejected", "malformed"),
        (3, "rejected", "hash_mismatch"),
        (4, "accepted", ""),
    ]
    assert len((await other.client.list_lessons()).lessons) == 2


async def test_import_splits_lines_across_chunks_and_rejects_oversized_lines(
    node: Node, other: Node
) -> None:
    await learn(node)
    bundle = await node.client.export_bundle()

    async def parts() -> AsyncIterator[agent_pb2.ImportRequest]:
        yield agent_pb2.ImportRequest(options=agent_pb2.ImportOptions(source_label="t"))
        yield agent_pb2.ImportRequest(jsonl=b"x" * 70_000)
        yield agent_pb2.ImportRequest(jsonl=b"y" * 10 + b"\n")
        for i in range(0, len(bundle), 7):
            yield agent_pb2.ImportRequest(jsonl=bundle[i : i + 7])

    response = await other.stub.Import(parts())
    assert [(a.index, a.reason) for a in response.acks] == [(0, "too_large"), (1, "")]

    async def late_options() -> AsyncIterator[agent_pb2.ImportRequest]:
        yield agent_pb2.ImportRequest(jsonl=b"\n")
        yield agent_pb2.ImportRequest(options=agent_pb2.ImportOptions(dry_run=True))

    with pytest.raises(grpc.aio.AioRpcError) as raw:
        await other.stub.Import(late_options())
    assert raw.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_a_forged_record_in_a_bundle_is_refused(node: Node, other: Node) -> None:
    await learn(node)
    [line] = (await node.client.export_bundle()).splitlines()
    obj = json.loads(line)
    obj["provenance"]["source_agent_id"] = other.identity.node_id
    forged = canonical_bytes(obj)
    [ack] = (await other.client.import_bundle(forged)).acks
    assert (ack.status, ack.reason) == ("rejected", "key_mismatch")


@pytest.mark.parametrize("registry", ["knows_nobody", "none"])
async def test_a_bundle_signed_by_a_key_no_registry_knows_is_held_as_unknown_signer(
    node: Node, registry: str
) -> None:
    await learn(node)
    bundle = await node.client.export_bundle(statuses="active")
    stranger = await start_node(3, known=[] if registry == "knows_nobody" else None)
    try:
        [ack] = (await stranger.client.import_bundle(bundle)).acks
        assert (ack.status, ack.reason) == ("quarantined", "unknown_signer")
        assert (await stranger.client.list_lessons()).lessons == ()
        [row] = await stranger.store.list_quarantine()
        assert row.reasons[0] == "unknown_signer"
        assert row.source_node_id == node.identity.node_id
        # The decision is kept with the row, for an operator's approval.
        assert row.confidence is not None and 0 < row.confidence < 0.5
        assert row.transfer_rule == "probation"  # a source never judged here
        # Offered again: the same held record, not a second row.
        [again] = (await stranger.client.import_bundle(bundle)).acks
        assert again.status == "duplicate"
        assert len(await stranger.store.list_quarantine()) == 1
    finally:
        await stranger.client.close()
        await stranger.server.stop(None)


async def test_a_bundle_runs_the_key_pin_stage(node: Node) -> None:
    await learn(node)
    bundle = await node.client.export_bundle(statuses="active")
    rotated = await start_node(4, known=[node.identity])
    assert rotated.registry is not None
    rotated.registry.keys[node.identity.node_id] = NodeIdentity.from_seed(
        b"\x09" * 32
    ).public_key_b64
    try:
        [ack] = (await rotated.client.import_bundle(bundle)).acks
        assert (ack.status, ack.reason) == ("rejected", "key_not_pinned")
        assert (await rotated.client.list_lessons()).lessons == ()
    finally:
        await rotated.client.close()
        await rotated.server.stop(None)


async def test_a_bundle_imported_record_arriving_later_by_gossip_is_a_duplicate(
    node: Node, other: Node
) -> None:
    await learn(node)
    bundle = await node.client.export_bundle(statuses="active")
    [ack] = (await other.client.import_bundle(bundle)).acks
    assert ack.status == "accepted"
    request = peer_pb2.PublishRequest(
        sender_node_id=node.identity.node_id,
        records=[
            records_pb2.SignedRecord(
                kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=bundle.rstrip(b"\n")
            )
        ],
    )
    response = await handle_publish(request, PublishDeps(other.pipeline))
    # Never DEFERRED (that means "store down, retry" and would be retried forever).
    assert [a.status for a in response.acks] == [records_pb2.ACK_STATUS_DUPLICATE]
    [row] = await other.store.list_lessons(LessonFilter(statuses=None))
    assert {p.via_node_id for p in row.provenance} == {"", node.identity.node_id}


# -- the sync SDK and errors ------------------------------------------------------------------


async def test_sync_client_gives_the_same_typed_results(node: Node) -> None:
    def drive() -> tuple[str, str, int]:
        with Client(node.address, timeout=10.0) as client:
            made = client.record_outcome(
                node.outcome("s1", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
            )
            recalled = client.recall("run the test suite", session_id="s2", project_digest=PROJECT)
            with pytest.raises(NotFound):
                client.history(str(uuid.uuid4()))
            return made.ids("created")[0], recalled.lessons[0].id, len(client.export_bundle())

    # The sync client blocks its thread: run it off the loop that serves it.
    created, recalled, size = await asyncio.to_thread(drive)
    assert created == recalled and size > 0


async def test_unreachable_node_is_a_lamarck_error(node: Node) -> None:
    port = int(node.address.rsplit(":", 1)[1])
    await node.server.stop(None)
    async with AsyncClient(f"127.0.0.1:{port}", timeout=2.0) as client:
        with pytest.raises(LamarckError) as info:
            await client.list_lessons()
    assert info.value.reason in ("unavailable", "deadline_exceeded")


async def test_a_deeply_nested_line_is_refused_as_too_deep_and_loses_nothing(
    node: Node, other: Node
) -> None:
    await learn(node)
    [line] = (await node.client.export_bundle()).splitlines()
    deep = b'{"content": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    assert len(deep) < DEFAULT_LIMITS.max_record_bytes
    result = await other.client.import_bundle(b"\n".join([deep, line]) + b"\n")
    assert [(a.index, a.status, a.reason) for a in result.acks] == [
        (0, "rejected", "too_deep"),
        (1, "accepted", ""),
    ]
