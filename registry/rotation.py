"""Key rotation as the registry sees it: may this id's pin move from the old key to the new?

The rotation record itself is defined in ``lamarck.proto.keys``; this module only checks that
a received one moves exactly this id from exactly its pinned key to exactly the key being
registered, and that the old key signed it. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from lamarck.errors import InvalidRecord, LamarckError, VerificationError
from lamarck.proto.signing import RecordKind, verify_object
from lamarck.proto.timefmt import parse_ts

__all__ = ["RotationInvalid", "check_rotation_record"]


class RotationInvalid(LamarckError):
    """A rotation record does not authorise this pin move; ``reason`` says why."""

    default_reason = "bad_rotation"


def check_rotation_record(
    rotation: Mapping[str, Any],
    *,
    node_id: str,
    old_key: str,
    new_key: str,
    now: datetime,
    max_future_skew_s: float,
) -> None:
    """Check ``rotation`` moves ``node_id`` from ``old_key`` to ``new_key``, signed by the old.

    Raises ``RotationInvalid`` with reason ``malformed``, ``wrong_target``, ``future_timestamp``
    or the signature's reason (``key_mismatch``, ``bad_signature``, ...).
    """
    try:
        claimed_id = rotation["node_id"]
        claimed_old = rotation["old_public_key"]
        claimed_new = rotation["new_public_key"]
        created = parse_ts(rotation["created_at"])
        signed_by = rotation["signature"]["signed_by"]
    except (KeyError, TypeError, InvalidRecord) as e:
        raise RotationInvalid(f"malformed rotation record: {e}", reason="malformed") from e
    # (1) It is about this id and exactly this move: a rotation for another pin is useless.
    if (claimed_id, claimed_old, claimed_new) != (node_id, old_key, new_key):
        raise RotationInvalid("rotation is for another id or key pair", reason="wrong_target")
    if created > now + timedelta(seconds=max_future_skew_s):
        raise RotationInvalid("rotation is dated in the future", reason="future_timestamp")
    # (2) The old (pinned) key signed it: only the holder of the pinned key can move the pin.
    if signed_by != old_key:
        raise RotationInvalid("rotation is not signed by the old key", reason="key_mismatch")
    try:
        verify_object(RecordKind.key_rotation, rotation, signer_id_path=None)
    except VerificationError as e:
        raise RotationInvalid(f"rotation signature: {e}", reason=e.reason) from e
