"""The node's network side: registry membership, publishing, peer calls and anti-entropy.

``Sharing`` (``service.py``) composes the parts; each lives in the module named for it.
"""

from __future__ import annotations

from lamarck.node.sharing.membership import (
    ENROLLMENT_FILE,
    PEER_CACHE_FILE,
    Membership,
    read_enrollment,
)
from lamarck.node.sharing.peer_client import ChannelPool, PeerClient
from lamarck.node.sharing.service import ReputationBook, Sharing

__all__ = [
    "ENROLLMENT_FILE",
    "PEER_CACHE_FILE",
    "ChannelPool",
    "DeliveryFailed",
    "Membership",
    "PeerClient",
    "ReputationBook",
    "Sharing",
    "read_enrollment",
]
