"""LessonService over the in-memory store: the issue-3 rules end to end, and adaptive memory"""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from lamarck.domain.rows import Category, LessonFilter, LessonStatus
from lamarck.errors import (
    ConflictError,
    EvidenceError,
    InvalidRecord,
    NotFound,
    PolicyRejected,
    SecretDetected,
)
from lamarck.learning.params import LearningParams, LessonParams
from lamarck.learning.scopes import GLOBAL, project_scope
from lamarck.learning.situations import (
    Escalate,
    Note,
    Probe,
    Proceed,
    Situation,
    SituationCall,
    env_fingerprint,
)
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.reputation.events import EventKind
from lamarck.reputation.transfer import TransferParams
from tests.unit.store.lesson_service_harness import (
    DAY,
    IN_TESTS,
    P1,
    P2,
    P3,
    ROOT,
    SUITE,
    Harness,
)


@pytest.fixture
def h() -> Harness:
    return Harness()


SCOPE1 = project_scope(P1)


async def _seed_mistake(h: Harness) -> tuple[str, str]:
    """Session A: pytest from tests/ fails, from the root it works. Returns (lesson, outcome)."""
    a = h.outcome("A", [(IN_TESTS, "failed", SUITE), (ROOT, "ok", SUITE)])
    result = await h.service.record_outcome(a)
    [lesson_id] = result.ids("created")
    return lesson_id, a.id


# -- adaptive memory: the three scenarios and the planted control ------------------------------


async def test_scenario_seed_a_mistake_then_avoid_it(h: Harness) -> None:
    lesson_id, a_id = await _seed_mistake(h)
    lesson = await h.store.get_lesson(lesson_id)
    assert lesson.status is LessonStatus.ACTIVE and lesson.confidence == 0.5
    assert lesson.evidence == (a_id,) and lesson.scope == SCOPE1
    assert lesson.operation == ROOT and "tests/" in lesson.content

    # Session B: a different task in the same project; the lesson is in the prompt.
    recall = await h.service.recall("add a flag to the CLI and run the test suite", {}, SCOPE1, "B")
    assert lesson_id in recall.section.included and lesson.content in recall.section.text
    preamble = await h.service.check_operation(IN_TESTS, SCOPE1)
    assert preamble is not None and "Prefer" in preamble
    b = h.outcome("B", [(ROOT, "ok", SUITE)])
    result = await h.service.record_outcome(b)
    assert result.ids("confirmed") == [lesson_id]
    after = await h.store.get_lesson(lesson_id)
    assert after.confidence == pytest.approx(0.65) and after.evidence == (a_id, b.id)

    # Another project never sees it.
    other = await h.service.recall("run the test suite", {}, project_scope(P2), "X")
    assert other.lessons == ()


async def test_scenario_learn_what_worked(h: Harness) -> None:
    a = h.outcome("A", [("shell:scripts/build_docs.sh", "ok", "docs")])
    await h.service.record_outcome(a)
    # The extractor proposes the lesson, citing this turn's outcome as evidence.
    written = await h.service.write_lesson(
        "Build the docs with scripts/build_docs.sh; plain sphinx misses the API pages.",
        "shell:scripts/build_docs.sh",
        SCOPE1,
        evidence=[a.id],
    )
    assert written is not None and written.status is LessonStatus.ACTIVE
    recall = await h.service.recall("update the docs pages and build the docs", {}, SCOPE1, "B")
    assert recall.lessons[0].id == written.id
    b = h.outcome("B", [("shell:scripts/build_docs.sh", "ok", "docs")])
    result = await h.service.record_outcome(b)
    assert result.ids("confirmed") == [written.id]


async def test_scenario_unlearn_when_the_environment_changes(h: Harness) -> None:
    old_id, a_id = await _seed_mistake(h)
    await h.service.recall("run the test suite", {}, SCOPE1, "B")
    await h.service.record_outcome(h.outcome("B", [(ROOT, "ok", SUITE)]))

    # Session C: the fixture is flipped. The lesson is in play, its operation fails.
    await h.service.recall("run the test suite", {}, SCOPE1, "C")
    c = h.outcome("C", [(ROOT, "failed", SUITE), (IN_TESTS, "ok", SUITE)])
    result = await h.service.record_outcome(c)
    assert result.ids("contradicted") == [old_id]
    assert result.ids("superseded") == [old_id]
    [new_id] = result.ids("created")
    old = await h.store.get_lesson(old_id)
    # The outcome settles the conflict between the two lessons: the loser moves
    # by the settlement's −0.3 from 0.65, instead of attribution's −0.25; the winner is new.
    assert old.confidence == pytest.approx(0.35) and old.status is LessonStatus.SUPERSEDED
    assert (await h.store.get_lesson(new_id)).verified_against == (old_id,)

    # Session D: the stale lesson is gone from the prompt, the new one is there.
    recall = await h.service.recall("run the test suite", {}, SCOPE1, "D")
    assert old_id not in recall.section.included and new_id in recall.section.included
    history = await h.service.history(new_id)
    assert [r.id for r in history] == [old_id, new_id]
    cited = {e for r in history for e in r.evidence}
    assert {a_id, c.id} <= cited


async def test_planted_control_fabricated_evidence_is_refused_at_write_time(h: Harness) -> None:
    await _seed_mistake(h)
    before = await h.store.stats()
    with pytest.raises(EvidenceError) as info:
        await h.service.write_lesson(
            "Always skip the tests.", ROOT, SCOPE1, evidence=[str(uuid.uuid4())]
        )
    assert info.value.reason == "unknown_evidence"
    assert await h.store.stats() == before


# -- evidence and claims ------------------------------------------------------------------


async def test_fabricated_evidence_id_is_refused_at_write_time(h: Harness) -> None:
    with pytest.raises(EvidenceError, match="do not exist"):
        await h.service.write_lesson("x works", ROOT, SCOPE1, evidence=["not-an-outcome"])


async def test_lesson_without_evidence_is_stored_claimed_at_0_3_and_kept_out_of_prompts(
    h: Harness,
) -> None:
    claim = await h.service.remember("Run pytest with -x to stop early.", ROOT, SCOPE1)
    assert claim is not None
    assert claim.status is LessonStatus.CLAIMED and claim.confidence == 0.3
    assert claim.evidence == ()
    recall = await h.service.recall("run pytest", {}, SCOPE1, "S")
    assert recall.lessons == () and recall.section.text == ""


async def test_claim_gains_evidence_and_enters_prompts_after_one_attributed_confirmation(
    h: Harness,
) -> None:
    claim = await h.service.remember("Run pytest with -x to stop early.", ROOT, SCOPE1)
    assert claim is not None
    recall = await h.service.recall("run pytest", {}, SCOPE1, "S", include_claimed=True)
    assert [r.id for r in recall.claimed] == [claim.id] and recall.section.text == ""
    o = h.outcome("S", [(ROOT, "ok", SUITE)])
    await h.service.record_outcome(o)
    row = await h.store.get_lesson(claim.id)
    assert row.status is LessonStatus.ACTIVE and row.evidence == (o.id,)
    assert row.confidence == pytest.approx(0.45)
    assert claim.id in (await h.service.recall("run pytest", {}, SCOPE1, "T")).section.included


async def test_user_retired_lesson_is_never_relearned_from_same_evidence(h: Harness) -> None:
    lesson_id, a_id = await _seed_mistake(h)
    retired = await h.service.retire(lesson_id, "user")
    assert retired.superseded_by == "retired:user" and retired.status is LessonStatus.RETIRED
    with pytest.raises(EvidenceError) as info:
        await h.service.write_lesson("Prefer root pytest.", ROOT, SCOPE1, evidence=[a_id])
    assert info.value.reason == "retired_evidence"
    assert (await h.service.recall("run the test suite", {}, SCOPE1, "S")).lessons == ()


async def test_evidence_from_an_outcome_that_teaches_nothing_is_refused(h: Harness) -> None:
    liar = h.outcome("L", [(ROOT, "ok", SUITE)], claim_ok=False)
    await h.service.record_outcome(liar)
    with pytest.raises(EvidenceError, match="teaches nothing"):
        await h.service.write_lesson("Prefer root pytest.", ROOT, SCOPE1, evidence=[liar.id])


# -- attribution --------------------------------------------------------------------------


async def test_pytest_lesson_is_not_blamed_for_failed_web_fetch(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)
    await h.service.recall("run the test suite", {}, SCOPE1, "B")
    o = h.outcome("B", [(ROOT, "ok", SUITE), ("web:fetch", "failed", "docs")], passed=False)
    result = await h.service.record_outcome(o)
    assert result.changes == ()
    assert (await h.store.get_lesson(lesson_id)).confidence == 0.5


async def test_outcome_claiming_tests_it_did_not_run_teaches_nothing(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)
    await h.service.recall("run the test suite", {}, SCOPE1, "B")
    o = h.outcome("B", [(ROOT, "failed", SUITE), (IN_TESTS, "ok", SUITE)], claim_ok=False)
    result = await h.service.record_outcome(o)
    assert result.recorded and not result.teaches and result.changes == ()
    assert (await h.store.get_outcome(o.id)).claim_ok is False
    assert (await h.store.get_lesson(lesson_id)).confidence == 0.5


async def test_outcome_with_injected_instruction_teaches_nothing(h: Harness) -> None:
    o = h.outcome("A", [(IN_TESTS, "failed", SUITE), (ROOT, "ok", SUITE)], injected=True)
    result = await h.service.record_outcome(o)
    assert result.recorded and result.changes == ()


async def test_success_in_a_different_context_adds_the_generalisation_step(h: Harness) -> None:
    a = h.outcome("A", [(ROOT, "ok", SUITE)])
    await h.service.record_outcome(a)
    written = await h.service.write_lesson(
        "Run pytest from the root.",
        ROOT,
        SCOPE1,
        evidence=[a.id],
        context={"domain": "python", "environment": "linux"},
    )
    assert written is not None
    await h.service.recall("run pytest from the root", {"environment": "windows"}, SCOPE1, "W")
    await h.service.record_outcome(h.outcome("W", [(ROOT, "ok", SUITE)]))
    assert (await h.store.get_lesson(written.id)).confidence == pytest.approx(0.70)


async def test_failure_in_a_different_context_barely_moves_confidence(h: Harness) -> None:
    a = h.outcome("A", [(ROOT, "ok", SUITE)])
    await h.service.record_outcome(a)
    written = await h.service.write_lesson(
        "Run pytest from the root.", ROOT, SCOPE1, evidence=[a.id], context={"domain": "python"}
    )
    assert written is not None
    await h.service.recall("run pytest from the root", {"domain": "rust"}, SCOPE1, "R")
    await h.service.record_outcome(h.outcome("R", [(ROOT, "failed", SUITE)], passed=False))
    assert (await h.store.get_lesson(written.id)).confidence == pytest.approx(0.45)


# -- scopes -------------------------------------------------------------------------------


async def test_lesson_confirmed_from_two_projects_is_promoted_then_demoted_by_a_third(
    h: Harness,
) -> None:
    lesson_id, _ = await _seed_mistake(h)  # learned in P1
    await h.service.record_outcome(
        h.outcome("X", [(ROOT, "ok", SUITE)], project=P2, in_play=[lesson_id])
    )
    promoted = await h.store.get_lesson(lesson_id)
    assert promoted.scope == GLOBAL and promoted.confirmed_projects == (P1, P2)
    assert (await h.service.recall("run the test suite", {}, project_scope(P3), "Y")).lessons

    result = await h.service.record_outcome(
        h.outcome("Z", [(ROOT, "failed", SUITE)], passed=False, project=P3, in_play=[lesson_id])
    )
    assert result.ids("demoted") == [lesson_id]
    demoted = await h.store.get_lesson(lesson_id)
    assert demoted.scope == project_scope(P2)


async def test_the_same_run_in_a_second_project_promotes_the_first_lesson(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)  # learned in P1
    # The same mistake and fix in P2, with nothing recalled: the lesson's second project.
    again = h.outcome("B", [(IN_TESTS, "failed", SUITE), (ROOT, "ok", SUITE)], project=P2)
    result = await h.service.record_outcome(again)
    assert result.ids("created") == []
    assert result.ids("confirmed") == [lesson_id] and result.ids("promoted") == [lesson_id]
    promoted = await h.store.get_lesson(lesson_id)
    assert promoted.scope == GLOBAL and promoted.confirmed_projects == (P1, P2)
    everything = await h.store.list_lessons(LessonFilter(statuses=None, category=Category.LESSON))
    assert [r.id for r in everything] == [lesson_id]


async def test_recall_with_the_goal_of_the_run_that_taught_a_lesson_finds_it() -> None:
    h = Harness(embedder=HashingEmbedder())
    goal = "make the test suite pass"
    taught = h.outcome("A", [(IN_TESTS, "failed", "s"), (ROOT, "ok", "s")], goal=goal)
    [lesson_id] = (await h.service.record_outcome(taught)).ids("created")
    # The lesson's words ("Prefer `shell:pytest` over ... for s.") share nothing with the goal.
    recalled = await h.service.recall(goal, {}, SCOPE1, "B")
    assert [x.id for x in recalled.lessons] == [lesson_id]
    # The goal finds the lesson here; it is never part of what the lesson says.
    assert goal not in (await h.store.get_lesson(lesson_id)).content
    unrelated = await h.service.recall("deploy the web site to production", {}, SCOPE1, "C")
    assert unrelated.lessons == ()


# -- supersede, never delete --------------------------------------------------------------


async def test_edit_supersedes_and_the_new_row_inherits_evidence_and_confidence(h: Harness) -> None:
    lesson_id, a_id = await _seed_mistake(h)
    await h.service.record_outcome(h.outcome("B", [(ROOT, "ok", SUITE)], in_play=[lesson_id]))
    new = await h.service.edit(lesson_id, "Run pytest from the repository root.", "user")
    old = await h.store.get_lesson(lesson_id)
    assert old.superseded_by == new.id and old.status is LessonStatus.SUPERSEDED
    assert new.confidence == old.confidence and new.evidence == old.evidence
    assert new.supersedes == lesson_id and a_id in new.evidence
    assert [r.id for r in await h.service.history(new.id)] == [lesson_id, new.id]
    with pytest.raises(ConflictError):
        await h.service.edit(lesson_id, "again", "user")


async def test_retired_lesson_stays_queryable_and_hard_delete_is_explicit(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)
    await h.service.retire(lesson_id, "user")
    rows = await h.service.list(scope=SCOPE1, statuses=(LessonStatus.RETIRED,))
    assert [r.id for r in rows] == [lesson_id]
    await h.service.hard_delete(lesson_id)
    with pytest.raises(NotFound):
        await h.store.get_lesson(lesson_id)


# -- reconcile and caps -------------------------------------------------------------------


async def test_reconcile_decays_unused_lessons_and_retires_below_0_2(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)
    h.clock.advance(2 * DAY)
    result = await h.service.reconcile()
    assert result.decayed == (lesson_id,)
    assert (await h.store.get_lesson(lesson_id)).confidence == pytest.approx(0.5 - 0.02 - 0.002)
    for _ in range(20):
        h.clock.advance(DAY)
        await h.service.reconcile()
    row = await h.store.get_lesson(lesson_id)
    assert row.status is LessonStatus.RETIRED and row.confidence < 0.2
    assert row.superseded_by is None  # a decay is not a user's retirement
    # The event log has each decay and the retirement, by the loop.
    events = await h.store.lesson_events([lesson_id])
    assert {e.actor for e in events} == {"loop"}
    assert events[1].kind == "decayed" and events[1].confidence_before == 0.5
    assert (events[-1].kind, events[-1].reason) == ("retired", "below_retire_level")


async def test_used_lesson_does_not_decay(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)
    await h.service.reconcile()
    h.clock.advance(DAY)
    await h.service.recall("run the test suite", {}, SCOPE1, "B")
    h.clock.advance(60)
    result = await h.service.reconcile()
    assert lesson_id not in result.decayed


async def test_reconcile_caps_active_lessons_per_scope_by_superseding_the_lowest() -> None:
    h = Harness(LearningParams(lesson=LessonParams(max_active_per_scope=3, candidate_pool=5)))
    a = h.outcome("A", [(ROOT, "ok", SUITE)])
    await h.service.record_outcome(a)
    ids = []
    for i in range(5):
        row = await h.service.write_lesson(f"lesson number {i}", f"op{i}", SCOPE1, evidence=[a.id])
        assert row is not None
        ids.append(row.id)
    # Make the first two the strongest.
    for i in (0, 1):
        await h.service.report_use(ids[i], session_id=f"c{i}")
        await h.service.record_outcome(h.outcome(f"c{i}", [(f"op{i}", "ok", None)]))
    result = await h.service.reconcile()
    assert len(result.capped) == 2
    active = await h.service.list(scope=SCOPE1)
    assert len(active) == 3 and {ids[0], ids[1]} <= {r.id for r in active}


async def test_recall_returns_at_most_5_lessons_within_300_tokens(h: Harness) -> None:
    a = h.outcome("A", [(ROOT, "ok", SUITE)])
    await h.service.record_outcome(a)
    for i in range(12):
        await h.service.write_lesson(
            f"Run the test suite step {i} carefully.", f"op{i}", SCOPE1, evidence=[a.id]
        )
    recall = await h.service.recall("run the test suite", {}, SCOPE1, "S")
    assert 0 < len(recall.lessons) <= 5 and recall.section.tokens <= 300


async def test_check_operation_returns_none_without_a_lesson(h: Harness) -> None:
    assert await h.service.check_operation("shell:rm -rf build", SCOPE1) is None


# -- secrets and incognito ----------------------------------------------------------------


async def test_lesson_carrying_a_credential_is_refused(h: Harness) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with pytest.raises(SecretDetected) as info:
        await h.service.remember(f"Use {token} to push.", "shell:git push", SCOPE1)
    assert "github_token" in info.value.details["kinds"]
    assert await h.store.count_lessons(LessonFilter(statuses=None)) == 0


async def test_outcome_carrying_a_credential_is_refused_and_not_stored(h: Harness) -> None:
    o = h.outcome("A", [("shell:git clone https://bot:Xy9kP2mQ7z@git.example.com/r", "ok", None)])
    with pytest.raises(SecretDetected):
        await h.service.record_outcome(o)
    assert await h.store.existing_outcome_ids([o.id]) == set()


async def test_incognito_session_records_nothing(h: Harness) -> None:
    o = h.outcome("I", [(IN_TESTS, "failed", SUITE), (ROOT, "ok", SUITE)])
    result = await h.service.record_outcome(o, incognito=True)
    assert not result.recorded
    assert await h.service.remember("x", ROOT, SCOPE1, incognito=True) is None
    assert await h.store.stats() == (await InMemoryLessonStore().stats())


# -- situations ---------------------------------------------------------------------------

FP = env_fingerprint("/usr/bin/gh", "2.40.0")


async def test_declared_blocker_is_probed_first_then_escalated_or_invalidated(h: Harness) -> None:
    s = Situation.declared(
        tool="gh",
        subject="gh",
        kind="auth",
        env_fingerprint=FP,
        unblock="gh auth login --web",
        probe="gh auth status",
    )
    row = await h.service.record_situation(s, SCOPE1)
    assert row is not None and row.category is Category.SITUATION
    again = await h.service.record_situation(s, SCOPE1)
    assert again is not None and again.id == row.id
    call = SituationCall("gh", "gh", FP)
    assert await h.service.before_dispatch(call, SCOPE1) == Probe(row.id, "gh auth status")
    blocked = await h.service.before_dispatch(call, SCOPE1, probe_blocked={row.id: True})
    assert isinstance(blocked, Escalate) and row.id in blocked.message
    clear = await h.service.before_dispatch(call, SCOPE1, probe_blocked={row.id: False})
    assert clear == Proceed(invalidate=(row.id,))
    assert (await h.store.get_lesson(row.id)).status is LessonStatus.RETIRED
    assert await h.service.before_dispatch(call, SCOPE1) == Proceed()


async def test_inferred_situation_is_never_persisted_by_the_service(h: Harness) -> None:
    inferred = Situation.inferred(tool="web_fetch", subject="gh", kind="auth")
    with pytest.raises(InvalidRecord):
        await h.service.record_situation(inferred, SCOPE1)
    no_probe = Situation.declared(tool="gh", subject="gh", kind="not_installed")
    row = await h.service.record_situation(no_probe, SCOPE1)
    assert row is not None
    assert isinstance(await h.service.before_dispatch(SituationCall("gh", "gh"), SCOPE1), Note)


async def test_written_lesson_counts_its_evidence_project_toward_promotion(h: Harness) -> None:
    a = h.outcome("A", [(ROOT, "ok", SUITE)])
    await h.service.record_outcome(a)
    row = await h.service.write_lesson("Run pytest from the root.", ROOT, SCOPE1, evidence=[a.id])
    assert row is not None and row.confirmed_projects == (P1,)
    await h.service.record_outcome(
        h.outcome("Q", [(ROOT, "ok", SUITE)], project=P2, in_play=[row.id])
    )
    assert (await h.store.get_lesson(row.id)).scope == GLOBAL


# -- the reality signal on imported lessons ------------------------------------

SOURCE_NODE = "lmk1" + "s" * 32


async def _imported(h: Harness, *, confidence: float = 0.3, original: float = 0.8) -> str:
    """A lesson as the import pipeline stores one: from another node, with its claimed value."""
    lesson_id, _ = await _seed_mistake(h)
    row = await h.store.get_lesson(lesson_id)
    await h.store.update_lesson(
        dataclasses.replace(
            row,
            imported_from=SOURCE_NODE,
            original_confidence=original,
            confidence=confidence,
            content_hash="ab" * 32,
            context={"domain": "testing"},
        )
    )
    return lesson_id


async def test_using_an_imported_lesson_that_works_credits_its_source(h: Harness) -> None:
    lesson_id = await _imported(h)
    result = await h.service.record_outcome(
        h.outcome("B", [(ROOT, "ok", SUITE)], in_play=[lesson_id])
    )
    [event] = result.reality
    assert event.kind is EventKind.LESSON_CONFIRMED
    assert event.node_id == SOURCE_NODE
    assert event.weight == pytest.approx(0.8)  # the confidence the source claimed
    assert event.record_hash == "ab" * 32 and event.domain == "testing"
    # First local proof: the reality-tested row (+0.2 x claimed) beats the plain step here.
    after = (await h.store.get_lesson(lesson_id)).confidence
    assert after == pytest.approx(0.3 + TransferParams().reality_tested_boost * 0.8)


async def test_the_reality_tested_boost_applies_once(h: Harness) -> None:
    lesson_id = await _imported(h)
    await h.service.record_outcome(h.outcome("B", [(ROOT, "ok", SUITE)], in_play=[lesson_id]))
    first = (await h.store.get_lesson(lesson_id)).confidence
    await h.service.record_outcome(h.outcome("C", [(ROOT, "ok", SUITE)], in_play=[lesson_id]))
    second = (await h.store.get_lesson(lesson_id)).confidence
    # Later confirmations follow the local step, which is smaller than the boost was.
    assert 0 < second - first < TransferParams().reality_tested_boost * 0.8


async def test_an_imported_lesson_that_fails_charges_its_source(h: Harness) -> None:
    lesson_id = await _imported(h, confidence=0.6)
    result = await h.service.record_outcome(
        h.outcome("B", [(ROOT, "failed", SUITE)], passed=False, in_play=[lesson_id])
    )
    [event] = result.reality
    assert event.kind is EventKind.LESSON_CONTRADICTED and event.node_id == SOURCE_NODE
    assert (await h.store.get_lesson(lesson_id)).confidence < 0.6


async def test_own_lessons_produce_no_reputation_events(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)
    result = await h.service.record_outcome(
        h.outcome("B", [(ROOT, "ok", SUITE)], in_play=[lesson_id])
    )
    assert result.ids("confirmed") == [lesson_id]
    assert result.reality == ()


# -- who a lesson may be shared with ---------------------------------------------

ALICE_NODE = "lmk1" + "a" * 32


async def test_set_access_changes_the_lesson_in_place_and_moves_its_version(h: Harness) -> None:
    lesson_id, _ = await _seed_mistake(h)
    before = await h.store.get_lesson(lesson_id)
    h.clock.advance(60)
    after = await h.service.set_access(lesson_id, "private", [ALICE_NODE, ALICE_NODE])
    assert (after.id, after.access_level, after.recipients) == (lesson_id, "private", (ALICE_NODE,))
    assert after.updated_at > before.updated_at  # the next publication is a newer version
    assert after.content == before.content and after.confidence == before.confidence
    public = await h.service.set_access(lesson_id, "public")
    assert (public.access_level, public.recipients) == ("public", ())


@pytest.mark.parametrize(
    ("level", "recipients", "reason"),
    [
        ("secret", (), "bad_access_level"),
        ("private", (), "no_recipients"),
        ("private", ("bob",), "bad_recipient"),
        ("trusted", (ALICE_NODE,), "recipients_need_private"),
    ],
)
async def test_set_access_refuses_what_the_record_could_not_say(
    h: Harness, level: str, recipients: tuple[str, ...], reason: str
) -> None:
    lesson_id, _ = await _seed_mistake(h)
    before = await h.store.get_lesson(lesson_id)
    with pytest.raises(InvalidRecord) as err:
        await h.service.set_access(lesson_id, level, recipients)
    assert err.value.reason == reason
    assert await h.store.get_lesson(lesson_id) == before


async def test_an_imported_lessons_access_is_its_sources_to_decide(h: Harness) -> None:
    lesson_id = await _imported(h)
    with pytest.raises(PolicyRejected) as err:
        await h.service.set_access(lesson_id, "public")
    assert err.value.reason == "imported_lesson"
