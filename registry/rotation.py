"""Key rotation as the registry sees it: may this id's pin move from the old key to the new?

The rotation record and its signature checks are ``lamarck.proto.keys`` (``KeyRotation``,
``verify_rotation``: signed by the old key, countersigned by the new); this module adds what
only the registry knows — that it moves exactly this id from exactly its pinned key to the key
being registered. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from lamarck.errors import InvalidRecord, RotationInvalid, VerificationError
from lamarck.proto.keys import verify_rotation
from lamarck.proto.timefmt import parse_ts

__all__ = ["check_rotation_record"]


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
        record = verify_rotation(rotation)
    except InvalidRecord as e:
        raise RotationInvalid(f"malformed rotation record: {e}", reason="malformed") from e
    except VerificationError as e:
        # Not signed by its old key, a new id not derived from the new key, or a bad signature.
        raise RotationInvalid(f"rotation does not verify: {e}", reason=e.reason) from e
    # It moves exactly this id from exactly its pinned key to exactly the key being
    # registered: a genuine rotation of another pin (or an older one) authorises nothing here.
    target = (record.node_id, record.old_public_key, record.new_public_key)
    if target != (node_id, old_key, new_key):
        raise RotationInvalid("rotation is for another id or key pair", reason="wrong_target")
    if parse_ts(record.created_at) > now + timedelta(seconds=max_future_skew_s):
        raise RotationInvalid("rotation is dated in the future", reason="future_timestamp")
