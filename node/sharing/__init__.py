"""The node's network side: registry membership, publishing, peer calls and anti-entropy.

``Sharing`` (``service.py``) composes the parts; each lives in the module named for it:

* ``Membership`` (``membership.py``): the registry, this node's registration, the live peers,
  the registry's principals and revocations, and the authentication of PeerService callers;
* ``PeerClient`` (``peer_client.py``): outgoing Publish, Sync and RequestVote calls with our
  peer tokens;
* ``PeerIntake`` (``intake.py``): what the PeerService answers its peers with (Publish's
  pipeline and forwards, what a Sync offers);
* ``Publisher`` (``publishing.py``): the scan of own lessons into the durable outbox and its
  delivery;
* ``AntiEntropy`` (``anti_entropy.py``): Sync pulls into the import pipeline;
* ``Voting`` (``voting.py``) over ``QuorumCollector`` and ``QuorumLedger`` (``quorum.py``):
  votes on the records held ``awaiting_quorum``, and the certificates that travel with the
  records a quorum accepted;
* ``TaintSweeper`` (``taint.py``): lessons of revoked or graylisted sources out of every
  prompt, re-quarantined ``tainted_source``;
* ``Trust`` (``trust.py``) over ``SummaryIntake`` (``summaries.py``): global trust recomputed
  over peers' signed local-trust summaries taken in from Sync, this node's own signed at each
  recomputation and served in Sync;
* ``Attestations`` and ``AttestationPush`` (``attestations.py``): this node's signed outcome
  attestations on the lessons it imported, and the ones its peers sent, verified, kept,
  pushed and expired;
* ``NetworkStatus`` (``status.py``): the network facts of the node's status.

``ports.py`` holds the ports they are built over besides the store and the outbox.
"""

from __future__ import annotations

from lamarck.node.sharing.membership import (
    ENROLLMENT_FILE,
    PEER_CACHE_FILE,
    Membership,
    read_enrollment,
)
from lamarck.node.sharing.peer_client import ChannelPool, PeerClient
from lamarck.node.sharing.ports import ReputationBook
from lamarck.node.sharing.service import Sharing

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
