"""The quorum asked about a held record, as an operator reads it.

``OperatorService.ShowQuarantine`` gives a held record's ``QuorumLedger`` entry as JSON text
(``quorum_json``; "" when no quorum was asked). ``lamarck quarantine show`` and the console's
quarantine page both read it here, so the two say the same of a record's certificate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["CERTIFICATE_STATES", "certificate_state", "parse_quorum"]

#: How the certificate stands for each quorum state (``QuorumLedger`` entries).
CERTIFICATE_STATES: Mapping[str, str] = {
    "pending": "none yet (awaiting votes)",
    "accepted": "made here: the record was stored with it",
    "certified": "received from a peer and verified here",
    "rejected": "none: the quorum contradicted the record",
}


def parse_quorum(text: str) -> dict[str, Any] | None:
    """The quorum entry ``quorum_json`` holds; None when none was asked, or when the text is
    not a JSON object (the operator still sees the record, only without its quorum)."""
    if not text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def certificate_state(quorum: Mapping[str, Any]) -> str:
    """How the certificate stands for a quorum entry, and how many signed votes it holds."""
    state = str(quorum.get("state", ""))
    cert = quorum.get("certificate")
    signed = len(cert.get("votes") or ()) if isinstance(cert, Mapping) else 0
    return CERTIFICATE_STATES.get(state, state) + (f" ({signed} signed votes)" if signed else "")
