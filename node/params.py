"""``NodeParams``: every rule's parameters for one node, built once from its settings.

The daemon calls ``node_params(settings)`` at start-up and passes the pieces down: the lesson
service, the import pipeline, gossip, the registry, the reputation book and the maintenance
loop all read the one instance, so no part of the wiring constructs its own defaults. Each
piece is a frozen params object validated on construction (a bad value is a ``ConfigError``
naming the field before anything is opened or bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lamarck.consensus.attestation import AttestationParams
from lamarck.consensus.params import HighStakesParams, QuorumParams, TaintParams
from lamarck.domain.embedder import Embedder
from lamarck.errors import ConfigError
from lamarck.gossip.publisher import GossipParams
from lamarck.health.params import HealthParams
from lamarck.learning.influence import InfluenceParams
from lamarck.learning.params import EvidenceParams, LearningParams
from lamarck.learning.write_behind import WriteBehindParams
from lamarck.node.api.limits import PeerLimits
from lamarck.node.config import NodeSettings
from lamarck.node.console.http import ConsoleParams
from lamarck.node.console.plots import PlotParams
from lamarck.node.importing.batch import BatchImportParams, PrimedEmbedder
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.node.store.recall_index import RecallIndexParams
from lamarck.node.supervision import SupervisionParams
from lamarck.policy.autonomy import AutonomyParams
from lamarck.policy.decision import ImportParams
from lamarck.policy.filters import DeclaredTool, FilterParams
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.proofs import ProofParams
from lamarck.reputation.book import TrustConfig
from lamarck.reputation.params import (
    GlobalTrustParams,
    PairwiseParams,
    PrincipalParams,
    ProbationParams,
    ReputationParams,
    SummaryParams,
)
from lamarck.reputation.transfer import TransferParams

__all__ = [
    "EmbedderParams",
    "MaintenanceParams",
    "NodeParams",
    "embedder_params",
    "node_params",
    "trust_config",
]


@dataclass(frozen=True, slots=True)
class EmbedderParams:
    """How the node's embedder runs: its ONNX session, and how catch-ups embed ahead of the
    import pipeline. Built first (``embedder_params``): the daemon makes the embedder with it;
    it is then held as ``NodeParams.embedding``."""

    onnx: OnnxParams = field(default_factory=OnnxParams)
    batch_import: BatchImportParams = field(default_factory=BatchImportParams)


@dataclass(frozen=True, slots=True)
class MaintenanceParams:
    """How often the node's own background rounds run (``node/maintenance.py``, the store
    gauges, the reputation book's flush; each on a ``node/periodic.py`` loop)."""

    # Seconds between two passes that supersede the lessons beyond each scope's cap, > 0.
    cap_interval_s: float = 600.0
    # Seconds between two recomputations of global trust over the book, > 0.
    global_trust_interval_s: float = 60.0
    # Seconds between two reconcile passes (decay of unused lessons, retirement below the
    # floor, and the cap), > 0. One a day: the learning rules count one decay step per pass.
    reconcile_interval_s: float = 86_400.0
    # Seconds between two refreshes of the store gauges (lessons by status, database size),
    # > 0: each is a few counting queries.
    store_stats_interval_s: float = 10.0
    # Seconds between two flushes of the reputation book's pending events, > 0: an idle
    # flush costs no round trip, and a crash (not a clean stop, which flushes) loses at most
    # this much of the book.
    reputation_flush_interval_s: float = 1.0

    def __post_init__(self) -> None:
        """Validate every field."""
        for name in (
            "cap_interval_s",
            "reconcile_interval_s",
            "global_trust_interval_s",
            "store_stats_interval_s",
            "reputation_flush_interval_s",
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 < value < float("inf"):
                raise ConfigError(f"invalid {name}: must be a finite number > 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class NodeParams:
    """Every parameter object a node runs with; build with ``node_params(settings)``."""

    learning: LearningParams = field(default_factory=LearningParams)
    pairwise: PairwiseParams = field(default_factory=PairwiseParams)
    global_trust: GlobalTrustParams = field(default_factory=GlobalTrustParams)
    principals: PrincipalParams = field(default_factory=PrincipalParams)
    # The operator's pre-trusted peers: global trust's anchors (this node alone when none).
    pretrusted: tuple[str, ...] = ()
    # Which peers' signed local-trust summaries count, and for how long.
    summaries: SummaryParams = field(default_factory=SummaryParams)
    # The import decision; it holds the node's one ``transfer`` and ``reputation`` (read
    # through the properties below, so each is one field of the tree).
    importing: ImportParams = field(default_factory=ImportParams)
    # The import chain's filter params, as ``importing`` holds them (read by tests and the
    # benches that build a chain of their own).
    filters: FilterParams = field(default_factory=FilterParams)
    # How high-stakes records are put to a quorum (voters, timeouts, retries).
    quorum: QuorumParams = field(default_factory=QuorumParams)
    # How long outcome attestations count and how many are kept per lesson version.
    attestation: AttestationParams = field(default_factory=AttestationParams)
    # How lessons of revoked or graylisted sources are swept out.
    taint: TaintParams = field(default_factory=TaintParams)
    gossip: GossipParams = field(default_factory=GossipParams)
    registry: RegistryParams = field(default_factory=RegistryParams)
    proofs: ProofParams = field(default_factory=ProofParams)
    peer_auth: PeerAuthParams = field(default_factory=PeerAuthParams)
    maintenance: MaintenanceParams = field(default_factory=MaintenanceParams)
    peer_limits: PeerLimits = field(default_factory=PeerLimits)
    # How the embedder runs and how catch-up imports embed ahead of the pipeline.
    embedding: EmbedderParams = field(default_factory=EmbedderParams)
    health: HealthParams = field(default_factory=HealthParams)
    console: ConsoleParams = field(default_factory=ConsoleParams)
    plot: PlotParams = field(default_factory=PlotParams)
    # How the store and the registry the node owns are probed and recovered.
    supervision: SupervisionParams = field(default_factory=SupervisionParams)
    # Recallable lessons the Postgres store keeps in memory for recall's search.
    recall_index: RecallIndexParams = field(default_factory=RecallIndexParams)

    @property
    def reputation(self) -> ReputationParams:
        """The reputation thresholds: the book scores with them, the import decision bands
        peers by them (one instance, held by ``importing``)."""
        return self.importing.reputation

    @property
    def transfer(self) -> TransferParams:
        """How an imported lesson's confidence transfers: the lesson service and the import
        decision read the same rule (one instance, held by ``importing``)."""
        return self.importing.transfer


def embedder_params(settings: NodeSettings) -> EmbedderParams:
    """How the node's embedder runs; built before the rest of ``NodeParams`` (the daemon
    makes the embedder with it, then passes both to ``node_params``): the defaults, and the
    weights its queries run on (``query_weights``)."""
    return EmbedderParams(onnx=OnnxParams(query_weights_8bit=settings.query_weights == "8bit"))


def node_params(
    settings: NodeSettings,
    embedder: Embedder | None = None,
    embedding: EmbedderParams | None = None,
) -> NodeParams:
    """The node's parameters: the rules' defaults where no setting speaks, the settings
    where one does, and each shared piece wired into every object that reads it.

    ``embedder`` is the node's own (the daemon passes it): the catch-up chunking it was
    wrapped with is the one ``embedding`` holds. ``embedding`` is what the embedder was made
    with (``embedder_params``; built here when not given). The import decision's checks are
    built from ``importing`` with that embedder where the pipeline is wired (params hold
    data only).
    """
    learning = LearningParams(
        influence=InfluenceParams(
            unverified_plan_share=settings.unverified_plan_share,
            gate=settings.influence_gate,
            stranger_words=settings.stranger_words,
        ),
        # The agent waits for no new lesson's vector and no recall's use marks.
        # They are written once the queue has been quiet for 0.1 s (or 256 vectors wait): in
        # a burst, the model embedding meanwhile took the agent's cores from its next calls.
        write_behind=WriteBehindParams(
            defer_claim_embedding=True,
            defer_learned_embedding=True,
            defer_use_marks=True,
            linger_s=0.1,
            # A recall embeds the newest queued vector with its task (the lesson an agent just
            # taught); after a burst (more than 8 waiting) it embeds none, searches what is
            # indexed and says how many wait.
            recall_settles_at_most=1,
            recall_burst_above=8,
        ),
    )
    transfer = TransferParams(
        probation=ProbationParams(interactions=settings.probation_interactions)
    )
    reputation = ReputationParams()
    if embedding is None:
        embedding = embedder_params(settings)
        # The catch-up chunking the node's embedder was wrapped with (one set for both).
        if isinstance(embedder, PrimedEmbedder):
            embedding = EmbedderParams(onnx=embedding.onnx, batch_import=embedder.params)
    autonomy = AutonomyParams()
    # The tools this node's agents use: the only ones a situation lesson may be about, here
    # and in the self-check of what this node publishes.
    filters = FilterParams(
        declared_tools=tuple(
            DeclaredTool(t.tool, frozenset(t.unblock), frozenset(t.probe))
            for t in settings.declared_tools
        )
    )
    high_stakes = HighStakesParams(
        confidence_threshold=settings.high_stakes_confidence,
        critical_domains=frozenset(d.strip().lower() for d in settings.high_stakes_domains),
        critical_tags=frozenset(t.strip().lower() for t in settings.high_stakes_tags),
        destructive_patterns=settings.high_stakes_patterns,
    )
    importing = ImportParams(
        filters=filters,
        autonomy=autonomy,
        # The secret scan on import is the one local learning writes through.
        secrets=learning.secrets,
        # The one clock-skew tolerance: records, registry records and outcomes alike.
        max_future_skew_s=settings.max_future_skew_s,
        transfer=transfer,
        reputation=reputation,
        high_stakes=high_stakes,
        evidence=EvidenceParams(confidence=learning.confidence),
    )
    gossip = GossipParams(
        anti_entropy_interval_s=settings.anti_entropy_interval_s,
        publish_threshold=settings.publish_threshold,
        shared_scopes=frozenset(settings.shared_scopes),
        team_sharing=settings.team_sharing,
        direct_push_max=settings.direct_push_max,
    )
    registry = RegistryParams(
        admission=AdmissionMode(settings.admission),
        max_future_skew_s=settings.max_future_skew_s,
        heartbeat_interval_s=settings.registry_heartbeat_s,
        # A principal looked up is reused for half a heartbeat: the refresh that follows each
        # heartbeat re-reads it anyway.
        principal_view_s=settings.registry_heartbeat_s / 2,
    )
    # The health report's context buckets are the learning rule's: both say what "the same
    # context" means.
    health = HealthParams(
        identical_above=learning.confidence.very_similar,
        similar_above=learning.confidence.somewhat_similar,
        status_warnings_max_age_s=settings.health_refresh_s,
    )
    return NodeParams(
        embedding=embedding,
        peer_limits=PeerLimits(
            max_concurrent=settings.peer_max_concurrent,
            rate_per_s=settings.peer_rate_per_s,
            burst=settings.peer_burst,
        ),
        principals=PrincipalParams(
            max_identities_per_endorser=settings.max_identities_per_endorser
        ),
        pretrusted=tuple(settings.pretrusted_peers),
        maintenance=MaintenanceParams(global_trust_interval_s=settings.global_trust_interval_s),
        health=health,
        learning=learning,
        importing=importing,
        filters=filters,
        quorum=QuorumParams(),
        taint=TaintParams(),
        gossip=gossip,
        registry=registry,
    )


def trust_config(params: NodeParams, node_id: str) -> TrustConfig:
    """What the reputation book needs to compute pairwise and global trust for ``node_id``."""
    return TrustConfig(
        self_id=node_id,
        pairwise=params.pairwise,
        global_trust=params.global_trust,
        pretrusted=params.pretrusted,
    )
