"""The quorum on a held record reads the same in ``lamarck quarantine show`` and the console."""

from __future__ import annotations

import json

import pytest

from lamarck.node.api.quorum_view import CERTIFICATE_STATES, certificate_state, parse_quorum


def test_a_quorum_entry_is_read_from_its_json() -> None:
    entry = {"state": "pending", "rounds": 2, "votes": []}
    assert parse_quorum(json.dumps(entry)) == entry


@pytest.mark.parametrize("text", ["", "not json", "[1]", '"pending"', "null"])
def test_no_quorum_or_unreadable_json_reads_as_none(text: str) -> None:
    assert parse_quorum(text) is None


def test_a_certificate_names_its_signed_votes() -> None:
    quorum = {"state": "accepted", "certificate": {"votes": [{}, {}, {}]}}
    assert certificate_state(quorum) == CERTIFICATE_STATES["accepted"] + " (3 signed votes)"


@pytest.mark.parametrize("certificate", [None, {}, {"votes": []}])
def test_without_signed_votes_only_the_state_is_said(certificate: object) -> None:
    quorum = {"state": "pending", "certificate": certificate}
    assert certificate_state(quorum) == "none yet (awaiting votes)"


def test_a_state_not_known_here_is_shown_as_it_is() -> None:
    assert certificate_state({"state": "expired"}) == "expired"
