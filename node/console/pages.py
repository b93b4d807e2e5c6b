"""Each console page rendered from plain values: HTML out, no I/O.

``page`` wraps a body in the shared layout (navigation, stylesheet, script, and the CSRF token
every state-changing form carries). The body renderers take what the operator API returns:
a ``HealthReport``, reputation table ``ReputationRow``s and ``ReputationEvent`` history,
``QuarantineRow``s, ``LessonRow``s and ``LessonEvent``s. Every value is escaped (it may come
from a peer). Tables marked ``sortable`` are sorted by ``static/console.js`` on a header click
(by each cell's ``data-sort``); ``filterable`` tables filter rows by their ``data-*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lamarck.domain.rows import LessonEvent, LessonRow, QuarantineRow
from lamarck.health.figures import Finding, HealthReport
from lamarck.learning.influence import LessonEvidence, evidence_label
from lamarck.node.api.quorum_view import certificate_state
from lamarck.node.api.reputation import event_source
from lamarck.node.console.activity import ActivityTimeline
from lamarck.node.console.markup import Markup, el, join, void
from lamarck.node.console.plots import (
    PlotParams,
    bar_chart,
    bin_text,
    calibration_curve,
    line_chart,
    rate_series,
    timeline_chart,
)
from lamarck.node.console.series import evidence_counts, quarantine_ages
from lamarck.proto.labels import with_label
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.table import TOP_PARTS, ReputationRow, global_text, named_parts, parts_text

__all__ = [
    "CSRF_FIELD",
    "NAV",
    "SHORT_ID_CHARS",
    "HeldDetails",
    "health_page",
    "lesson_page",
    "lessons_page",
    "overview_page",
    "page",
    "peer_page",
    "quarantine_page",
    "reputation_page",
]

#: (key, path, label) of every page, in menu order.
NAV: tuple[tuple[str, str, str], ...] = (
    ("overview", "/", "Overview"),
    ("reputation", "/reputation", "Reputation"),
    ("quarantine", "/quarantine", "Quarantine"),
    ("lessons", "/lessons", "Lessons"),
    ("health", "/health", "Health"),
)
#: Node id -> human label (``lamarck.proto.labels``): shown beside an id, never instead.
Labels = Mapping[str, str]
_NO_LABELS: Labels = {}
#: The form field and meta tag name carrying the anti-forgery token.
CSRF_FIELD = "csrf_token"


def page(title: str, active: str, body: Markup, *, csrf_token: str) -> Markup:
    """A whole HTML document: layout, menu with ``active`` marked, and ``body``."""
    menu = el(
        "nav",
        el(
            "ul",
            *(
                el(
                    "li",
                    el("a", label, href=path, aria_current="page" if key == active else None),
                )
                for key, path, label in NAV
            ),
            el(
                "li",
                el(
                    "form",
                    void("input", type="hidden", name=CSRF_FIELD, value=csrf_token),
                    el("button", "Sign out", type="submit"),
                    method="post",
                    action="/logout",
                    class_="logout",
                ),
            ),
        ),
    )
    head = el(
        "head",
        void("meta", charset="utf-8"),
        void("meta", name="viewport", content="width=device-width, initial-scale=1"),
        void("meta", name=CSRF_FIELD, content=csrf_token),
        el("title", f"{title} · lamarck"),
        void("link", rel="stylesheet", href="/static/console.css"),
        el("script", src="/static/console.js", defer=True),
    )
    return Markup(
        "<!doctype html>\n"
        + el("html", head, el("body", menu, el("main", el("h1", title), body)), lang="en")
    )


def _when(at: datetime | None) -> Markup:
    """A time as an RFC 3339 ``<time>`` element, or a dash."""
    if at is None:
        return Markup("–")
    text = format_ts(at)
    return el("time", text, datetime=text)


def _rate(value: float | None) -> str:
    """A rate as a percentage, or "n/a"."""
    return "n/a" if value is None else f"{value:.1%}"


def _findings(findings: Sequence[Finding]) -> Markup:
    """Warnings and strengths as a list, loudest class on each item."""
    if not findings:
        return el("p", "No warnings.", class_="ok")
    return el(
        "ul",
        *(
            el("li", f.message, class_=f"finding {f.severity.value}", data_code=f.code)
            for f in findings
        ),
        class_="findings",
    )


def overview_page(facts: Sequence[tuple[str, str]], warnings: Sequence[Finding]) -> Markup:
    """Node facts (admission, peers, gossip and outbox, as label and value) and warnings."""
    rows = [el("tr", el("th", label, scope="row"), el("td", value)) for label, value in facts]
    return join(
        [
            el("section", el("h2", "Node"), el("table", *rows, class_="facts")),
            el("section", el("h2", "Warnings"), _findings(warnings)),
        ]
    )


def health_page(report: HealthReport, *, p: PlotParams, activity: ActivityTimeline) -> Markup:
    """The health report with its charts (confidence bands, calibration, transfer, velocity)
    and ``activity``: lessons imported and records refused per time bin."""
    d, v, w, u = report.distribution, report.validation, report.velocity, report.usefulness
    bands = bar_chart(
        [("high", d.high), ("medium", d.medium), ("low", d.low)],
        title="Live lessons by confidence band",
        p=p,
    )
    transfer = bar_chart(
        [(t.name, t.rate) for t in report.transfer],
        title="Transfer success by context similarity",
        p=p,
        percent=True,
    )
    velocity = bar_chart(
        [("mean", w.mean_hours), ("median", w.median_hours), ("slowest", w.slowest_hours)],
        title="Hours from a contradiction to the update",
        p=p,
        unit=" h",
    )
    validity = [
        ("external validations", str(v.total)),
        ("confirmation rate", _rate(v.confirmation_rate)),
        ("contradiction rate", _rate(v.contradiction_rate)),
        ("context mismatch rate", _rate(v.context_mismatch_rate)),
        ("external error detection", _rate(v.external_error_detection)),
        ("overconfident errors", str(v.overconfident_errors)),
        ("responsive within a day", _rate(w.responsive_share)),
        ("knowledge usefulness", _rate(u.rate)),
        ("unused / stale high-confidence", f"{u.unused} / {u.stale}"),
        ("prediction accuracy", _rate(report.predictions.accuracy)),
        ("calibration", _rate(report.predictions.calibration)),
        ("retention", _rate(report.retention.rate)),
        ("compound learning", _rate(report.compound.rate)),
    ]
    table = el(
        "table",
        *(el("tr", el("th", k, scope="row"), el("td", val)) for k, val in validity),
        class_="facts",
    )
    return join(
        [
            el(
                "p",
                "Report at ",
                _when(report.generated_at),
                f", window {report.window_days:g} days",
            ),
            el("section", el("h2", "Assessment"), _findings((*report.warnings, *report.strengths))),
            el("section", el("h2", "Memory distribution"), bands, id="distribution"),
            el(
                "section",
                el("h2", "Calibration"),
                calibration_curve(report.predictions.buckets, p=p),
                id="calibration",
            ),
            el("section", el("h2", "External validity"), table, id="validity"),
            el(
                "section",
                el("h2", "Imports and rejections over time"),
                el(
                    "p",
                    f"{activity.imports} imported, {activity.rejections} rejected in "
                    f"{len(activity.bins)} bins of {bin_text(activity.bin_hours)} "
                    "(the bins follow the node's age)",
                    class_="muted",
                ),
                timeline_chart(activity, p=p),
                id="activity",
            ),
            el(
                "section",
                el("h2", "Imports and refusals per minute, by reason"),
                _rates(activity, p),
                id="rates",
            ),
            el("section", el("h2", "Transfer success"), transfer, id="transfer"),
            el("section", el("h2", "Update velocity"), velocity, id="velocity"),
        ]
    )


def _rates(activity: ActivityTimeline, p: PlotParams) -> Markup:
    """Imports and each refusal reason per minute over the activity window."""
    if not activity.bins:
        return el("p", "no activity yet", class_="muted")
    return line_chart(
        rate_series(activity),
        title="Imports and refusals per minute, by reason",
        p=p,
        start=activity.bins[0].start,
        end=activity.bins[-1].end,
        unit="/min",
    )


def _sort_header(*labels: str) -> Markup:
    """A table head whose columns the script sorts on click."""
    return el("thead", el("tr", *(el("th", lbl, scope="col", tabindex="0") for lbl in labels)))


def _select(label: str, name: str, table: str, values: Sequence[str], **extra: str) -> Markup:
    """A filter ``<select>`` over ``table``'s rows by their ``data-<name>``."""
    return el(
        "label",
        f"{label} ",
        el(
            "select",
            el("option", "all", value=""),
            *(el("option", v, value=v) for v in values),
            data_filter=name,
            data_table=table,
            **extra,
        ),
    )


#: A time series: (time, value) points, oldest first.
Series = Sequence[tuple[datetime, float]]


def _trend_chart(trends: Mapping[str, Series], labels: Labels, p: PlotParams, title: str) -> Markup:
    """Each peer's score over time, one line per peer (named by label and id start)."""
    points = [at for line in trends.values() for at, _ in line]
    if not points:
        return el("p", "no reputation events yet", class_="muted")
    series = [
        (with_label(peer, labels.get(peer, ""), width=SHORT_ID_CHARS), line)
        for peer, line in trends.items()
    ]
    return line_chart(series, title=title, p=p, start=min(points), end=max(points), y_max=1.0)


def reputation_page(
    rows: Sequence[ReputationRow],
    labels: Labels = _NO_LABELS,
    *,
    trends: Mapping[str, Series] | None = None,
    p: PlotParams | None = None,
) -> Markup:
    """The reputation table: sortable, filterable by band and by expertise domain; each peer
    links to its page, its label beside its id. ``trends``: each peer's score over time
    (``series.score_series``), drawn above the table."""
    bands = sorted({r.band.value for r in rows})
    domains = sorted({d for r in rows for d in r.domains})
    filters = el(
        "p",
        _select("Band", "band", "reputation", bands),
        # A peer has expertise in several domains: the script matches one word of the list.
        _select("Domain", "domains", "reputation", domains, data_match="word"),
        class_="filters",
    )

    def num(value: float, shown: str) -> Markup:
        return el("td", shown, data_sort=f"{value:.6f}")

    def _global_cell(value: float | None) -> Markup:
        # Unknown (nobody has judged the peer) sorts below every known value, even 0.
        return num(-1.0 if value is None else value, global_text(value))

    body = el(
        "tbody",
        *(
            el(
                "tr",
                el(
                    "td",
                    _short_peer(r.peer, labels, short=False),
                    data_sort=labels.get(r.peer, "") + r.peer,
                ),
                el("td", r.principal or "–"),
                el("td", r.band.value, data_sort=r.band.value),
                num(r.score, f"{r.score:.3f}"),
                num(r.pairwise, f"{r.pairwise:.2f}"),
                _global_cell(r.global_trust),
                num(r.accepted, str(r.accepted)),
                num(sum(r.rejected.values()), str(sum(r.rejected.values()))),
                el("td", ", ".join(sorted(r.domains)) or "–"),
                # Why the peer stands where it does: the score parts that weigh most.
                el("td", parts_text(r.parts, TOP_PARTS), class_="why"),
                data_band=r.band.value,
                data_domains=" ".join(sorted(r.domains)),
                class_=f"band-{r.band.value}",
            )
            for r in rows
        ),
    )
    table = el(
        "table",
        _sort_header(
            "node",
            "principal",
            "band",
            "score",
            "pairwise",
            "global",
            "accepted",
            "rejected",
            "domains",
            "why",
        ),
        body,
        id="reputation",
        class_="sortable filterable",
    )
    chart = (
        el(
            "section",
            el("h2", "Reputation over time"),
            _trend_chart(trends, labels, p, "Reputation score over time, per peer"),
            id="trend",
        )
        if trends and p is not None
        else ""
    )
    return join([chart, filters, table])


def peer_page(
    row: ReputationRow,
    events: Sequence[ReputationEvent],
    labels: Labels = _NO_LABELS,
    *,
    p: PlotParams | None = None,
    trend: Series = (),
) -> Markup:
    """One peer: its score parts (those that move the score, largest effect first), pairwise
    and global trust, expertise, and its event history with reasons, newest first."""
    moving = named_parts(row.parts)
    parts = (
        el(
            "table",
            *(
                el("tr", el("th", name, scope="row"), el("td", f"{value:+.4f}"))
                for name, value in moving
            ),
            class_="facts parts",
        )
        if moving
        else el("p", "No part moves the score: it stands at the neutral start.")
    )
    accuracy = "n/a" if row.weighted_accuracy is None else f"{row.weighted_accuracy:.2f}"
    facts = [
        ("node id", row.peer),
        ("label", labels.get(row.peer, "") or "none"),
        ("score", f"{row.score:.3f}"),
        ("band", row.band.value),
        ("principal", row.principal or "–"),
        ("pairwise trust", f"{row.pairwise:.3f}"),
        ("global trust", global_text(row.global_trust)),
        ("predictions correct", f"{row.correct} / {row.predictions} (weighted {accuracy})"),
        ("records accepted", str(row.accepted)),
        ("records rejected", ", ".join(f"{k} {v}" for k, v in sorted(row.rejected.items()))),
        ("votes right / wrong", f"{row.votes_right} / {row.votes_wrong}"),
        ("expertise", ", ".join(f"{d} {v:.2f}" for d, v in sorted(row.domains.items()))),
        ("last seen", format_ts(row.last_seen) if row.last_seen else "never"),
    ]
    summary = el(
        "table",
        *(el("tr", el("th", k, scope="row"), el("td", v or "–")) for k, v in facts),
        class_="facts",
    )
    history = el(
        "table",
        _sort_header("time", "event", "established by", "weight", "domain", "record", "reason"),
        el(
            "tbody",
            *(
                el(
                    "tr",
                    el("td", _when(e.at), data_sort=format_ts(e.at)),
                    el("td", e.kind.value),
                    el("td", event_source(e)),
                    el("td", f"{e.weight:.2f}"),
                    el("td", e.domain or "–"),
                    el("td", el("code", e.record_hash[:12]) if e.record_hash else "–"),
                    el("td", e.detail or "–"),
                    data_kind=e.kind.value,
                )
                for e in sorted(events, key=lambda e: e.at, reverse=True)
            ),
        ),
        id="events",
        class_="sortable",
    )
    chart = (
        el(
            "section",
            el("h2", "Score over time"),
            _trend_chart({row.peer: trend}, labels, p, "Reputation score over time"),
            id="trend",
        )
        if p is not None and trend
        else ""
    )
    return join([summary, chart, el("h2", "Score parts"), parts, el("h2", "Events"), history])


def _decide_form(row: QuarantineRow, decision: str, csrf_token: str) -> Markup:
    """A POST form deciding one held record, with a note and the anti-forgery token."""
    return el(
        "form",
        void("input", type="hidden", name=CSRF_FIELD, value=csrf_token),
        void("input", type="text", name="note", placeholder="note", required=True, maxlength="500"),
        el("button", decision, type="submit", class_=decision),
        method="post",
        action=f"/quarantine/{row.id}/{decision}",
        class_="decide",
    )


@dataclass(frozen=True, slots=True)
class HeldDetails:
    """What the operator service says of a held record beyond its row: the start of its
    content, the logged decision (who, when, the note) and the quorum asked about it (the
    ``QuorumLedger`` entry as ``ShowQuarantine``'s ``quorum_json`` gives it; ``None``: never
    asked)."""

    preview: str = ""
    decision: str = ""
    quorum: Mapping[str, Any] | None = None


def _stored_at(row: QuarantineRow) -> Markup:
    """The confidence an approval would store the record at, and the rule that gave it."""
    if row.confidence is None:
        return el("td", "–", data_sort="-1")
    rule = el("div", row.transfer_rule, class_="muted") if row.transfer_rule else Markup("")
    return el("td", f"{row.confidence:.2f}", rule, data_sort=f"{row.confidence:.6f}")


def _votes(votes: Sequence[Mapping[str, Any]], labels: Labels = _NO_LABELS) -> Markup:
    """Each vote received: voter, verdict and confidence, how many outcomes it names, whether
    it counted (the vote's time is the row's title)."""
    if not votes:
        return el("p", "no votes received", class_="muted")

    def counted(v: Mapping[str, Any]) -> str:
        return "yes" if v.get("counted") else f"no: {v.get('ignored') or 'ignored'}"

    return el(
        "table",
        el(
            "thead",
            el("tr", *(el("th", h) for h in ("voter", "verdict", "outcomes", "counted"))),
        ),
        el(
            "tbody",
            *(
                el(
                    "tr",
                    el("td", _short_peer(str(v.get("voter_id", "")), labels)),
                    el("td", f"{v.get('verdict', '')} {float(v.get('confidence', 0.0)):.2f}"),
                    el("td", str(len(v.get("outcome_ids") or ()))),
                    el("td", counted(v)),
                    data_verdict=str(v.get("verdict", "")),
                    data_counted="yes" if v.get("counted") else "no",
                    title=str(v.get("created_at", "")),
                )
                for v in votes
            ),
        ),
        class_="votes",
    )


#: Characters of a node id shown where space is short (the whole id is the link's title).
SHORT_ID_CHARS = 12


def _short_peer(node_id: str, labels: Labels = _NO_LABELS, *, short: bool = True) -> Markup:
    """A link to a peer's page: its label (a claim, so never alone) beside its id, shortened
    to its start when ``short`` (all of it on hover)."""
    cut = short and len(node_id) > SHORT_ID_CHARS + 1
    shown = node_id[:SHORT_ID_CHARS] + "…" if cut else node_id
    label = labels.get(node_id, "")
    return el(
        "a",
        el("span", label, class_="peer-label") if label else "",
        " " if label else "",
        el("code", shown, class_="peer-id"),
        href=f"/reputation/{node_id}",
        title=node_id,
        class_="peer",
    )


def _quorum(quorum: Mapping[str, Any] | None, labels: Labels = _NO_LABELS) -> Markup:
    """The quorum on a held record: state, counts against thresholds, certificate, votes."""
    if quorum is None:
        return el("td", el("span", "not asked", class_="muted"), class_="quorum")
    state = str(quorum.get("state", ""))
    counts: Mapping[str, Any] = quorum.get("counts") or {}
    tally = (
        f"validate {counts.get('validate', 0)} · contradict {counts.get('contradict', 0)} · "
        f"abstain {counts.get('abstain', 0)} (accept at {counts.get('accept_at', '–')}, "
        f"reject at {counts.get('reject_at', '–')})"
    )
    asked = f"{state}, {quorum.get('rounds', 0)} round(s)"
    if quorum.get("reason"):
        asked += f": {quorum['reason']}"
    return el(
        "td",
        el("p", el("strong", asked)),
        el("p", tally),
        el("p", "certificate: ", el("span", certificate_state(quorum), class_="certificate")),
        el("p", "next attempt ", str(quorum["next_at"])) if quorum.get("next_at") else "",
        _votes(quorum.get("votes") or (), labels),
        class_="quorum",
        data_quorum=state,
    )


def quarantine_page(
    rows: Sequence[QuarantineRow],
    *,
    csrf_token: str,
    details: Mapping[str, HeldDetails] | None = None,
    labels: Labels = _NO_LABELS,
    now: datetime | None = None,
    p: PlotParams | None = None,
) -> Markup:
    """The quarantine queue: each held record's reasons, the confidence an approval would
    store it at, the quorum's votes and certificate state; approve / reject pending ones.

    ``details`` maps a row's id to what the operator service says of it beyond the row.
    """
    if not rows:
        return el("p", "Nothing is held for review.", class_="ok")
    items = []
    for r in rows:
        more = (details or {}).get(r.id, HeldDetails())
        actions = (
            join([_decide_form(r, "approve", csrf_token), _decide_form(r, "reject", csrf_token)])
            if r.state == "pending"
            else join(
                [
                    el("span", r.state, class_=f"state {r.state}"),
                    el("span", more.decision, class_="decision") if more.decision else Markup(""),
                ]
            )
        )
        items.append(
            el(
                "tr",
                el(
                    "td",
                    el("strong", r.id),
                    el("div", "received ", _when(r.received_at), class_="muted"),
                    el("div", more.preview) if more.preview else "",
                    data_sort=format_ts(r.received_at),
                ),
                el("td", _short_peer(r.source_node_id, labels)),
                el("td", el("ul", *(el("li", reason) for reason in r.reasons))),
                _stored_at(r),
                _quorum(more.quorum, labels),
                el("td", actions),
                data_state=r.state,
                id=f"q-{r.id}",
            )
        )
    table = el(
        "table",
        _sort_header("record", "source", "reasons", "stored at", "quorum", "decision"),
        el("tbody", *items),
        id="quarantine",
        class_="sortable",
    )
    pending = [r.received_at for r in rows if r.state == "pending"]
    if now is None or p is None or not pending:
        return table
    ages = bar_chart(
        quarantine_ages(pending, now), title="Pending held records by time waiting", p=p
    )
    return join([el("section", el("h2", "How long they wait"), ages, id="ages"), table])


def _origin(row: LessonRow) -> str:
    """ "local" or "imported" (the lessons page filters on it)."""
    return "local" if row.imported_from is None else "imported"


def _evidence_class(evidence: LessonEvidence | None) -> str:
    """The class a lessons-page row is filtered on ("unknown" when not read)."""
    return "unknown" if evidence is None else evidence.evidence_class.value


def _evidence_text(evidence: LessonEvidence | None, confidence: float) -> str:
    """The evidence label (its class, the principals behind it), without the confidence."""
    if evidence is None:
        return "–"
    return evidence_label(evidence, confidence).rsplit(", confidence", 1)[0]


def _scope_text(scope: str) -> str:
    """A scope as the lessons table shows it: a project's digest cut to its start (the whole
    digest is a 64-character word that would take the lesson text's room)."""
    prefix, _, digest = scope.partition(":")
    return f"{prefix}:{digest[:8]}…" if digest and len(digest) > 9 else scope


def lessons_page(
    rows: Sequence[LessonRow],
    evidence: Mapping[str, LessonEvidence] | None = None,
    labels: Labels = _NO_LABELS,
    p: PlotParams | None = None,
) -> Markup:
    """Lessons: the active ones by evidence class (a chart, with ``p``), text search and
    filters by scope, status, origin and evidence class (proven
    here, corroborated, unverified, with the principals behind it); each links to its page."""
    ev = evidence or {}

    def choice(name: str, values: Sequence[str]) -> Markup:
        return el(
            "label",
            f"{name} ",
            el(
                "select",
                el("option", "all", value=""),
                *(el("option", v, value=v) for v in values),
                data_filter=name,
                data_table="lessons",
            ),
        )

    filters = el(
        "p",
        void("input", type="search", placeholder="search", data_search="lessons"),
        choice("scope", sorted({r.scope for r in rows})),
        choice("status", sorted({r.status.value for r in rows})),
        choice("origin", ["imported", "local"]),
        choice("evidence", sorted({_evidence_class(ev.get(r.id)) for r in rows})),
        class_="filters",
    )
    body = el(
        "tbody",
        *(
            el(
                "tr",
                el("td", el("a", r.content, href=f"/lessons/{r.id}")),
                el("td", r.operation),
                el("td", _evidence_text(ev.get(r.id), r.confidence)),
                el("td", f"{r.confidence:.2f}", data_sort=f"{r.confidence:.6f}"),
                el("td", r.status.value),
                el("td", _scope_text(r.scope), title=r.scope),
                el(
                    "td",
                    _origin(r),
                    *(
                        (" from ", _short_peer(r.source_node_id, labels))
                        if r.imported_from is not None and r.source_node_id
                        else ()
                    ),
                ),
                data_scope=r.scope,
                data_status=r.status.value,
                data_origin=_origin(r),
                data_evidence=_evidence_class(ev.get(r.id)),
            )
            for r in rows
        ),
    )
    table = el(
        "table",
        _sort_header("lesson", "operation", "evidence", "confidence", "status", "scope", "origin"),
        body,
        id="lessons",
        class_="sortable filterable",
    )
    classes = [e.evidence_class for r in rows if r.status.value == "active" and (e := ev.get(r.id))]
    chart = (
        el(
            "section",
            el("h2", "Active lessons by evidence class"),
            bar_chart(evidence_counts(classes), title="Active lessons by evidence class", p=p),
            id="evidence-classes",
        )
        if p is not None and classes
        else ""
    )
    return join([chart, filters, table])


def lesson_page(
    row: LessonRow,
    events: Sequence[LessonEvent],
    evidence: LessonEvidence | None = None,
    labels: Labels = _NO_LABELS,
) -> Markup:
    """One lesson: what it says, its evidence, where it came from, and its event history."""
    facts: list[tuple[str, str | Markup]] = [
        ("operation", row.operation),
        ("evidence", _evidence_text(evidence, row.confidence)),
        ("confidence", f"{row.confidence:.2f}"),
        ("status", row.status.value),
        ("scope", row.scope),
        (
            "origin",
            _origin(row)
            if row.imported_from is None
            else join([Markup("imported from "), _short_peer(row.imported_from, labels)]),
        ),
        ("confirmations / contradictions", f"{row.confirmations} / {row.contradictions}"),
        ("uses", f"{row.use_count} (last {format_ts(row.last_used) if row.last_used else '–'})"),
    ]
    if row.imported_from is not None:
        facts += [
            (
                "author",
                _short_peer(row.source_node_id, labels, short=False) if row.source_node_id else "–",
            ),
            ("confidence claimed by its author", _maybe(row.original_confidence)),
            ("confidence stored at import", _maybe(row.transferred_confidence)),
            ("signed record sha256", row.content_hash or "–"),
        ]
    links = [
        ("supersedes", row.supersedes),
        ("superseded by", row.superseded_by),
        *(("contested with", other) for other in row.contested_with),
        *(("verified against", other) for other in row.verified_against),
    ]
    related = [
        el("tr", el("th", k, scope="row"), el("td", el("a", v, href=f"/lessons/{v}")))
        for k, v in links
        if v and not v.startswith("retired:")
    ]
    provenance = el(
        "ul",
        *(
            el(
                "li",
                "from ",
                _short_peer(e.source_node_id, labels, short=False),
                " via ",
                _short_peer(e.via_node_id, labels, short=False),
                " at ",
                _when(e.received_at),
                el("code", f" {e.content_hash[:12]}") if e.content_hash else "",
            )
            for e in row.provenance
        ),
        id="provenance",
    )
    history = el(
        "table",
        _sort_header("time", "event", "actor", "confidence", "reason"),
        el(
            "tbody",
            *(
                el(
                    "tr",
                    el("td", _when(e.at), data_sort=format_ts(e.at)),
                    el("td", e.kind),
                    el("td", e.actor),
                    el("td", _confidence_move(e.confidence_before, e.confidence_after)),
                    el("td", e.reason),
                )
                for e in events
            ),
        ),
        id="history",
        class_="sortable",
    )
    return join(
        [
            el("blockquote", row.content),
            el(
                "table",
                *(el("tr", el("th", k, scope="row"), el("td", v)) for k, v in facts),
                class_="facts",
            ),
            el("table", *related, class_="facts") if related else "",
            el("h2", "Evidence"),
            (
                el("ul", *(el("li", el("code", o)) for o in row.evidence), id="evidence")
                if row.evidence
                else el("p", "no outcome of this node's own yet", id="evidence")
            ),
            el("h2", "Where it came from"),
            (
                provenance
                if row.provenance
                else el("p", "learned here" if row.imported_from is None else "imported")
            ),
            el("h2", "History"),
            history,
        ]
    )


def _maybe(value: float | None) -> str:
    """A confidence with two decimals, or a dash."""
    return "–" if value is None else f"{value:.2f}"


def _confidence_move(before: float | None, after: float | None) -> str:
    """ "0.50 → 0.65", or the one known side."""
    left = "" if before is None else f"{before:.2f}"
    right = "" if after is None else f"{after:.2f}"
    return f"{left} → {right}" if left and right else left or right
