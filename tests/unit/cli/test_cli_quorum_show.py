"""``lamarck quarantine show`` prints the quorum on a held record: state, counts, votes, and
the certificate's state."""

from __future__ import annotations

import json

import pytest

from lamarck.cli.quarantine import print_quorum
from lamarck.node.api.quorum_view import parse_quorum

QUORUM = {
    "content_hash": "ab" * 32,
    "state": "accepted",
    "rounds": 1,
    "reason": "accepted",
    "next_at": None,
    "voters": ["lmk1aaa", "lmk1bbb"],
    "votes": [
        {
            "voter_id": "lmk1aaa",
            "verdict": "confirm",
            "confidence": 1.0,
            "outcome_ids": ["o-1", "o-2"],
            "created_at": "2026-03-01T12:00:00Z",
            "counted": True,
            "ignored": "",
        },
        {
            "voter_id": "lmk1bbb",
            "verdict": "contradict",
            "confidence": 1.0,
            "outcome_ids": ["o-3"],
            "created_at": "2026-03-01T12:00:00Z",
            "counted": False,
            "ignored": "forged",
        },
    ],
    "certificate": {"record_hash": "ab" * 32, "votes": [{}, {}, {}, {}, {}]},
    "counts": {"validate": 5, "contradict": 1, "abstain": 0, "accept_at": 5, "reject_at": 3},
}


def test_the_quorum_prints_its_votes_and_certificate_state(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_quorum(parse_quorum(json.dumps(QUORUM)))
    out = capsys.readouterr().out
    assert "5 / 1 / 0" in out
    assert "made here" in out and "5 signed votes" in out
    assert "lmk1aaa" in out and "o-1, o-2" in out
    assert "no (forged)" in out


def test_a_record_never_put_to_a_quorum_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    print_quorum(parse_quorum(""))
    assert "quorum: never asked" in capsys.readouterr().out


def test_unreadable_quorum_json_reads_as_none() -> None:
    assert parse_quorum("not json") is None
    assert parse_quorum("[1]") is None
