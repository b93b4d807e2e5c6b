"""A node never signs what its own import pipeline would refuse: ``own_record_refusal``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lamarck.policy.decision import ImportParams
from lamarck.policy.filters import DeclaredTool, FilterParams
from lamarck.policy.self_check import own_record_refusal
from lamarck.proto.identity import NodeIdentity
from tests.factories import T0, identity, signed_record, uid

NOW = T0
ME = identity(5)
PARAMS = ImportParams()


def _own(evidence_at: datetime = NOW - timedelta(days=1), **over: Any) -> bytes:
    """This node's lesson as it would send it (confidence 0.8, made two days before NOW), its
    evidence dated ``evidence_at``; ``over`` as in ``memory_obj``."""
    return signed_record(
        ME,
        id=uid(42),
        created=NOW - timedelta(days=2),
        evidence_at=evidence_at,
        outcome_id=uid(43),
        confidence=0.8,
        confidence_interval={"mean": 0.8},
        **over,
    ).raw


def test_an_honest_lesson_would_be_accepted() -> None:
    assert own_record_refusal(_own(), params=PARAMS, now=NOW) is None


def test_evidence_dated_2999_would_be_refused_as_future_timestamp() -> None:
    raw = _own(evidence_at=datetime(2999, 1, 1, tzinfo=UTC))
    assert own_record_refusal(raw, params=PARAMS, now=NOW) == "future_timestamp"


def test_a_lesson_carrying_a_secret_would_be_refused() -> None:
    leaky = _own(content="Deploy with AWS key AKIAIOSFODNN7EXAMPLE before restarting.")
    reason = own_record_refusal(leaky, params=PARAMS, now=NOW)
    assert reason is not None and "secret" in reason


def test_a_private_lesson_is_judged_for_its_recipient() -> None:
    peer = NodeIdentity.from_seed(bytes([6]) * 32).node_id
    private = _own(access_level="private", recipients=[peer])
    assert own_record_refusal(private, params=PARAMS, now=NOW, recipient=peer) is None
    assert own_record_refusal(private, params=PARAMS, now=NOW, recipient="lmk1other") is not None


def test_bytes_that_are_not_the_signed_record_would_be_refused() -> None:
    raw = _own().replace(b"migrations", b"migrationz")
    assert own_record_refusal(raw, params=PARAMS, now=NOW) is not None


# -- situation lessons: a peer running this node's rules declares this node's tools ------------
_GH = {
    "tool": "check_cli_setup",
    "subject": "gh",
    "kind": "auth",
    "interactive": True,
    "unblock": "run `gh auth login`",
    "probe": "gh auth status",
    "source": "declared",
}


def _declaring(*tools: DeclaredTool) -> ImportParams:
    return ImportParams(filters=FilterParams(declared_tools=tools))


def test_a_situation_lesson_about_a_declared_tool_would_be_accepted() -> None:
    gh = DeclaredTool(
        "check_cli_setup", frozenset({"run `gh auth login`"}), frozenset({"gh auth status"})
    )
    raw = _own(content="`check_cli_setup` on gh needed the user (auth)", situation=_GH)
    assert own_record_refusal(raw, params=_declaring(gh), now=NOW) is None


def test_a_situation_lesson_about_a_tool_this_node_does_not_declare_is_not_sent() -> None:
    raw = _own(content="`check_cli_setup` on gh needed the user (auth)", situation=_GH)
    assert own_record_refusal(raw, params=PARAMS, now=NOW) == "unused_tool"
    other = DeclaredTool("sign_in_cli", frozenset({"run `gh auth login`"}))
    assert own_record_refusal(raw, params=_declaring(other), now=NOW) == "unused_tool"
