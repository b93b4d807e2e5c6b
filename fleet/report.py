"""What a fleet run shows: per-node counters, learning figures, the final report.

Pure tallies over values (``TurnRecord`` lists, a node's metrics text) and rich renderables
built from them; nothing here talks to a node.

**Repeated known mistakes**: an honest agent issuing a pitfall's failing form when some
honest agent of the same arm had issued it in an *earlier* round (the fleet knew). The
isolated arm (each agent's pitfalls relabelled as its own: ``isolated_pitfall``) is the
baseline; ``mistakes_reduction`` = 1 − shared ÷ isolated.

**Quorums**: every node's quorum ledger (one entry per held high-stakes record it asked a
quorum about or got a certificate for) tallied by what became of it: decided here (accepted,
rejected), certified elsewhere (a certificate arrived and verified), or pending by reason
(``too_few_voters``: no quorum can be formed in this network; ``awaiting_votes``: the voters
had no evidence yet; asked again later).

A scenario (``lamarck.fleet.scenarios``) is run a few times: its figures are shown per
run with their mean and spread (``scenario_table``), and summed up as one flat mapping
(``mean_and_spread``: each figure's mean, and ``<figure>_spread``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families
from rich.table import Table

from lamarck.proto.labels import with_label
from lamarck.reputation.table import ReputationRow, global_text

__all__ = [
    "EVIDENCE_CLASSES",
    "NODES_LEGEND",
    "NODE_ID_SHOWN",
    "ROUTINE_REFUSALS",
    "ArmFigures",
    "NodeCounts",
    "TurnRecord",
    "arm_figures",
    "evidence_delay_text",
    "evidence_table",
    "gate_figures",
    "learning_figures",
    "learning_table",
    "learning_verdict",
    "mean_and_spread",
    "node_counts",
    "nodes_table",
    "quorum_figures",
    "quorum_table",
    "reputation_rows",
    "reputation_table",
    "scenario_table",
    "split_refusals",
]

#: Characters of a node id the fleet's tables show beside its label.
NODE_ID_SHOWN = 12

SHARED = "shared"
ISOLATED = "isolated"


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn of one agent, as the driver saw it."""

    arm: str  # shared | isolated
    round: int
    agent: int
    node: int
    pitfall: int
    turn: int  # 0 or 1 (the task's first or second project)
    operations: tuple[str, ...]  # in the order run
    mistakes: int  # failing forms issued (they failed)
    first_ok: bool  # the first operation worked
    advised: bool  # a lesson on file was put before the call and decided the order
    poisoner: bool = False
    created: tuple[str, ...] = ()
    outcome_id: str = ""
    # The first attempt followed a known poison (``agents.followed_poison``).
    poisoned: bool = False
    # A known poison was before the agent at the decision (advice, a conflict side or a
    # hint), followed or not.
    exposed: bool = False


@dataclass(frozen=True, slots=True)
class ArmFigures:
    """One arm's figures over its honest agents."""

    turns: int
    steps: int
    mistakes: int
    repeated_known_mistakes: int
    first_attempt_success: float
    poisoned_decisions: int = 0
    exposed_decisions: int = 0


def arm_figures(records: Sequence[TurnRecord], arm: str) -> ArmFigures:
    """Tally one arm (honest agents only; records in run order)."""
    mine = [r for r in records if r.arm == arm and not r.poisoner]
    seen_before: dict[int, int] = {}  # pitfall -> first round some agent made its mistake
    repeated = 0
    for r in sorted(mine, key=lambda x: (x.round, x.agent, x.turn)):
        first = seen_before.get(r.pitfall)
        if r.mistakes and first is not None and first < r.round:
            repeated += r.mistakes
        if r.mistakes and first is None:
            seen_before[r.pitfall] = r.round
    turns = len(mine)
    return ArmFigures(
        turns=turns,
        steps=sum(len(r.operations) for r in mine),
        mistakes=sum(r.mistakes for r in mine),
        repeated_known_mistakes=repeated,
        first_attempt_success=(sum(r.first_ok for r in mine) / turns) if turns else 0.0,
        poisoned_decisions=sum(r.poisoned for r in mine),
        exposed_decisions=sum(r.exposed for r in mine),
    )


def learning_figures(records: Sequence[TurnRecord]) -> dict[str, float]:
    """Shared vs isolated: repeated known mistakes, steps, first-attempt success, reduction."""
    shared, isolated = arm_figures(records, SHARED), arm_figures(records, ISOLATED)
    out: dict[str, float] = {}
    for name, f in ((SHARED, shared), (ISOLATED, isolated)):
        out[f"{name}_turns"] = float(f.turns)
        out[f"{name}_steps"] = float(f.steps)
        out[f"{name}_mistakes"] = float(f.mistakes)
        out[f"{name}_repeated_known_mistakes"] = float(f.repeated_known_mistakes)
        out[f"{name}_first_attempt_success"] = round(f.first_attempt_success, 4)
        out[f"{name}_poisoned_decisions"] = float(f.poisoned_decisions)
    if isolated.repeated_known_mistakes:
        out["mistakes_reduction"] = round(
            1.0 - shared.repeated_known_mistakes / isolated.repeated_known_mistakes, 4
        )
        out["repeated_mistakes_ratio"] = round(
            shared.repeated_known_mistakes / isolated.repeated_known_mistakes, 4
        )
    return out


@dataclass(frozen=True, slots=True)
class NodeCounts:
    """One node's counters, from its metrics."""

    lessons: Mapping[str, float] = field(default_factory=dict)  # status -> count
    imports: Mapping[str, float] = field(default_factory=dict)  # result -> count
    rejected: Mapping[str, float] = field(default_factory=dict)  # reason -> count
    publish_received: float = 0.0

    @property
    def imported(self) -> float:
        """Records this node stored from peers."""
        return self.imports.get("accepted", 0.0)


def node_counts(metrics_text: str) -> NodeCounts:
    """Parse a node's Prometheus text into the counters the fleet shows."""
    lessons: dict[str, float] = {}
    imports: dict[str, float] = {}
    rejected: dict[str, float] = {}
    publish = 0.0
    for family in text_string_to_metric_families(metrics_text):
        for s in family.samples:
            if s.name == "lamarck_lessons":
                lessons[s.labels.get("status", "")] = float(s.value)
            elif s.name == "lamarck_imports_total":
                result = s.labels.get("result", "")
                imports[result] = imports.get(result, 0.0) + float(s.value)
                if result in ("rejected", "quarantined"):
                    reason = s.labels.get("reason", "") or result
                    rejected[reason] = rejected.get(reason, 0.0) + float(s.value)
            elif (
                s.name == "lamarck_rpc_requests_total"
                and s.labels.get("server") == "peer"
                and s.labels.get("method", "").endswith("/Publish")
            ):
                publish += float(s.value)
    return NodeCounts(lessons, imports, rejected, publish)


#: Refusals that are routine gossip, not anyone's attack: a relay offering again a record this
#: node refused before (``replay``) or an older version of one it holds (``rollback``), a
#: record past its age (``expired``), a record of a source already graylisted, a record held
#: for a quorum. Every other refusal is about what a source signed (poison, a bad signature,
#: equivocation, ...).
ROUTINE_REFUSALS = frozenset(
    {"replay", "rollback", "expired", "graylisted_source", "awaiting_quorum"}
)

#: What the per-node table's columns mean, printed under it.
NODES_LEGEND = (
    "learned: lessons this node's agents taught it; imported: peers' records stored here; "
    "dup: records already held, offered again by gossip (routine); held: quarantined for "
    "review or a quorum; re-gossip: routine refusals (records refused before or older "
    "versions relayed again, records of an already graylisted source); refused: records "
    "whose content or signature failed a check (attacks and bad records), by reason."
)


def split_refusals(rejected: Mapping[str, float]) -> tuple[int, dict[str, int]]:
    """``(routine refusals, the others by reason)`` of a node's refusals by reason."""
    routine = sum(int(v) for k, v in rejected.items() if k in ROUTINE_REFUSALS)
    others = {k: int(v) for k, v in sorted(rejected.items()) if v and k not in ROUTINE_REFUSALS}
    return routine, others


def nodes_table(
    names: Sequence[str],
    roles: Sequence[str],
    counts: Sequence[NodeCounts | None],
    learned: Sequence[int] | None,
    title: str = "nodes",
) -> Table:
    """The per-node table, live during a run and final after it (one table, refreshed):
    lessons learned here, active, imported, duplicate and held imports, routine re-gossip
    refusals, and the other refusals by reason (see :data:`NODES_LEGEND`).

    ``learned`` is None when the run counts no lessons per node (a scenario): shown as "-".
    """
    table = Table(title=title, title_justify="left")
    for col in ("node", "role", "learned", "active", "imported", "dup", "held", "re-gossip"):
        table.add_column(col, justify="left" if col in ("node", "role") else "right")
    table.add_column("refused by reason")
    shown = ["-"] * len(names) if learned is None else [str(n) for n in learned]
    for name, role, c, n in zip(names, roles, counts, shown, strict=True):
        if c is None:
            table.add_row(name, role, n, "-", "-", "-", "-", "-", "down")
            continue
        routine, others = split_refusals(c.rejected)
        table.add_row(
            name,
            role,
            n,
            f"{c.lessons.get('active', 0):.0f}",
            f"{c.imported:.0f}",
            f"{c.imports.get('duplicate', 0):.0f}",
            f"{c.imports.get('quarantined', 0):.0f}",
            str(routine),
            ", ".join(f"{k} {v}" for k, v in others.items()) or "-",
        )
    return table


#: Evidence classes in the order the per-node table shows them.
EVIDENCE_CLASSES = ("proven_here", "corroborated", "unverified")


def evidence_table(
    names: Sequence[str],
    roles: Sequence[str],
    classes: Sequence[Mapping[str, int] | None],
    poisoned: Sequence[int],
) -> Table:
    """Per node: its active lessons by evidence class (for that node), and the decisions its
    honest agents made that followed a known poison."""
    table = Table(title="lessons by evidence class, per node")
    table.add_column("node")
    table.add_column("role")
    for col in ("proven here", "corroborated", "unverified", "poisoned decisions"):
        table.add_column(col, justify="right")
    for name, role, c, n in zip(names, roles, classes, poisoned, strict=True):
        cells = ["-"] * 3 if c is None else [str(c.get(k, 0)) for k in EVIDENCE_CLASSES]
        table.add_row(name, role, *cells, "-" if role == "byzantine" else str(n))
    return table


def gate_figures(records: Sequence[TurnRecord], gate_off: Iterable[int]) -> dict[str, float]:
    """Honest agents' shared-arm turns on nodes with the influence gate on and off (in one
    run): turns, decisions that followed a known poison, decisions a known poison was before
    (followed or not), and known mistakes repeated."""
    off = set(gate_off)
    out: dict[str, float] = {}
    for name, mine in (
        ("gate_on", [r for r in records if r.node not in off]),
        ("gate_off", [r for r in records if r.node in off]),
    ):
        f = arm_figures(mine, SHARED)
        out[f"{name}_turns"] = float(f.turns)
        out[f"{name}_poisoned_decisions"] = float(f.poisoned_decisions)
        out[f"{name}_exposed_decisions"] = float(f.exposed_decisions)
        out[f"{name}_repeated_known_mistakes"] = float(f.repeated_known_mistakes)
    return out


def evidence_delay_text(delays: Mapping[str, float]) -> str:
    """One line on how fast honest peer lessons came to drive decisions at honest nodes."""
    n = delays.get("honest_imports", 0.0)
    parts = [f"honest peer lessons held at honest nodes: {n:.0f}"]
    for name, what in (("decides", "came to drive decisions"), ("corroborated", "corroborated")):
        k = delays.get(f"honest_imports_{name}", 0.0)
        rounds = delays.get(f"rounds_until_{name}")
        after = f" after {rounds:.1f} round(s) on average" if rounds is not None else ""
        parts.append(f"{k:.0f} {what}{after}")
    return "; ".join(parts)


def learning_table(figures: Mapping[str, float]) -> Table:
    """Learning with sharing vs the same agents isolated (:func:`learning_verdict` says what
    the figures mean)."""
    table = Table(title="learning: the same agents with sharing vs isolated", title_justify="left")
    table.add_column("figure")
    table.add_column("with sharing", justify="right")
    table.add_column("isolated", justify="right")
    for label, key in (
        ("turns", "turns"),
        ("steps", "steps"),
        ("failing forms issued", "mistakes"),
        ("known mistakes repeated", "repeated_known_mistakes"),
        ("first-attempt success", "first_attempt_success"),
        ("decisions that followed a poison", "poisoned_decisions"),
    ):
        a, b = figures.get(f"{SHARED}_{key}", 0.0), figures.get(f"{ISOLATED}_{key}", 0.0)
        fmt = "{:.0%}" if key == "first_attempt_success" else "{:.0f}"
        table.add_row(label, fmt.format(a), fmt.format(b))
    return table


def learning_verdict(figures: Mapping[str, float], *, byzantine: int = 0) -> str:
    """The closing paragraph: the figure judged by the goal of its condition. Without
    poisoners, >= 90 % fewer repeated known mistakes; with ``byzantine`` poisoning nodes,
    honest agents no worse than isolated. "" when the run has no such figure."""
    if "mistakes_reduction" not in figures:
        return ""
    fewer = f"Known mistakes repeated: {figures['mistakes_reduction']:.0%} fewer with sharing"
    if not byzantine:
        met = "met" if figures["mistakes_reduction"] >= 0.9 else "NOT met"
        return f"{fewer} (goal: at least 90% fewer; {met})."
    shared = round(figures.get(f"{SHARED}_repeated_known_mistakes", 0.0))
    isolated = round(figures.get(f"{ISOLATED}_repeated_known_mistakes", 0.0))
    met = "met" if shared <= isolated else "NOT met"
    poisoners = "1 poisoning node" if byzantine == 1 else f"{byzantine} poisoning nodes"
    return (
        f"{fewer}. With {poisoners} the goal is honest agents no worse off than isolated "
        f"({shared} vs {isolated}: {met}); the 90% goal is for a fleet without poisoners "
        f"(--byzantine 0). {_poison_sentence(figures)}"
    )


def _poison_sentence(figures: Mapping[str, float]) -> str:
    """What the poisoners' lessons did to the honest decisions, by the counted figure."""
    followed = round(figures.get(f"{SHARED}_poisoned_decisions", 0.0))
    if not followed:
        return "No honest decision followed a poisoned lesson."
    return (
        f"{followed} honest decision{'s' if followed > 1 else ''} followed a poisoned lesson "
        "before reality exposed its source."
    )


def quorum_figures(entries: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Quorum figures over ``(state, reason)`` ledger entries of every node: how many records
    were put to a quorum (``quorum_records``), ``quorum_accepted`` / ``quorum_rejected`` here,
    ``quorum_certified`` (accepted elsewhere, its certificate verified here), and
    ``quorum_pending`` with ``quorum_pending_<reason>`` for each reason."""
    out: dict[str, float] = {
        "quorum_records": 0.0,
        "quorum_accepted": 0.0,
        "quorum_rejected": 0.0,
        "quorum_certified": 0.0,
        "quorum_pending": 0.0,
    }
    for state, reason in entries:
        out["quorum_records"] += 1
        key = f"quorum_{state}" if state != "pending" else "quorum_pending"
        out[key] = out.get(key, 0.0) + 1
        if state == "pending":
            name = f"quorum_pending_{reason or 'unasked'}"
            out[name] = out.get(name, 0.0) + 1
    return out


def quorum_table(figures: Mapping[str, float]) -> Table:
    """How the quorums on held high-stakes records ended, over every node's ledger."""
    table = Table(title="quorums on high-stakes records (every node's ledger)")
    table.add_column("outcome")
    table.add_column("records", justify="right")
    rows = [
        ("accepted by a quorum this node ran", "quorum_accepted"),
        ("rejected by a quorum this node ran", "quorum_rejected"),
        ("accepted elsewhere, certificate verified here", "quorum_certified"),
        ("pending", "quorum_pending"),
    ]
    for label, key in rows:
        table.add_row(label, f"{figures.get(key, 0.0):.0f}")
    prefix = "quorum_pending_"
    for key in sorted(k for k in figures if k.startswith(prefix)):
        table.add_row(f"  pending: {key[len(prefix) :]}", f"{figures[key]:.0f}")
    decided = sum(figures.get(k, 0.0) for k in ("quorum_accepted", "quorum_rejected"))
    table.caption = (
        f"{decided:.0f} of {figures.get('quorum_records', 0.0):.0f} decided by a quorum "
        f"({figures.get('quorum_certified', 0.0):.0f} more taken on a peer's certificate)"
    )
    return table


def reputation_rows(
    rows: Iterable[ReputationRow], names: Mapping[str, str]
) -> list[dict[str, object]]:
    """Rows of a node's reputation table as the fleet prints them (each peer's fleet name
    beside the start of its id)."""
    out: list[dict[str, object]] = []
    for r in rows:
        refused = ", ".join(f"{k} {v}" for k, v in sorted(r.rejected.items()) if v)
        out.append(
            {
                "peer": with_label(r.peer, names.get(r.peer, ""), width=NODE_ID_SHOWN),
                "band": str(r.band),
                "score": f"{r.score:.2f}",
                "global trust": global_text(r.global_trust, 3),
                "accepted": r.accepted,
                "refused": refused or "-",
            }
        )
    return out


def reputation_table(rows: Iterable[Mapping[str, object]], title: str) -> Table:
    """A node's view of its peers' reputation (whatever columns the node returned)."""
    rows = list(rows)
    table = Table(title=title)
    columns = list(rows[0].keys()) if rows else ["node_id", "score"]
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*(f"{row.get(c, '')}" for c in columns))
    return table


def mean_and_spread(runs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each figure's mean over the runs, and its spread (population standard deviation) as
    ``<figure>_spread``; figures missing from a run are left out of that run's tally."""
    out: dict[str, float] = {}
    keys = list(dict.fromkeys(k for run in runs for k in run))
    for key in keys:
        values = [float(run[key]) for run in runs if key in run]
        out[key] = round(statistics.fmean(values), 4)
        out[f"{key}_spread"] = round(statistics.pstdev(values), 4)
    return out


def _figure(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3f}"


def scenario_table(
    name: str, runs: Sequence[Mapping[str, float]], goal: str, met: bool | None = None
) -> Table:
    """A scenario's figures: one column per run, then mean and spread; its goal below."""
    table = Table(title=f"{name}: {len(runs)} run(s) on one fleet")
    table.add_column("figure")
    for k in range(len(runs)):
        table.add_column(f"run {k + 1}", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("spread", justify="right")
    summary = mean_and_spread(runs)
    for key in dict.fromkeys(k for run in runs for k in run):
        cells = [_figure(run[key]) if key in run else "-" for run in runs]
        table.add_row(key, *cells, _figure(summary[key]), _figure(summary[f"{key}_spread"]))
    verdict = "" if met is None else (" — met" if met else " — not met")
    table.caption = f"goal: {goal}{verdict}"
    return table
