"""The console's lesson pages: the quarantine (held records, their quorum and the operator's
decision forms), the lesson list and one lesson's page with its history. HTML out, no I/O;
every value escaped (it may come from a peer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lamarck.domain.rows import LessonEvent, LessonRow, QuarantineRow
from lamarck.learning.influence import LessonEvidence, evidence_label
from lamarck.node.api.quorum_view import certificate_state
from lamarck.node.console.markup import Markup, el, join, void
from lamarck.node.console.plots import PlotParams, bar_chart
from lamarck.node.console.series import evidence_counts, quarantine_ages
from lamarck.node.console.widgets import (
    CSRF_FIELD,
    NO_LABELS,
    Labels,
    short_peer,
    sort_header,
    when,
)
from lamarck.proto.timefmt import format_ts

__all__ = ["HeldDetails", "lesson_page", "lessons_page", "quarantine_page"]


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


def _votes(votes: Sequence[Mapping[str, Any]], labels: Labels = NO_LABELS) -> Markup:
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
                    el("td", short_peer(str(v.get("voter_id", "")), labels)),
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


def _quorum(quorum: Mapping[str, Any] | None, labels: Labels = NO_LABELS) -> Markup:
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
    labels: Labels = NO_LABELS,
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
                    el("div", "received ", when(r.received_at), class_="muted"),
                    el("div", more.preview) if more.preview else "",
                    data_sort=format_ts(r.received_at),
                ),
                el("td", short_peer(r.source_node_id, labels)),
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
        sort_header("record", "source", "reasons", "stored at", "quorum", "decision"),
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
    labels: Labels = NO_LABELS,
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
                        (" from ", short_peer(r.source_node_id, labels))
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
        sort_header("lesson", "operation", "evidence", "confidence", "status", "scope", "origin"),
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
    labels: Labels = NO_LABELS,
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
            else join([Markup("imported from "), short_peer(row.imported_from, labels)]),
        ),
        ("confirmations / contradictions", f"{row.confirmations} / {row.contradictions}"),
        ("uses", f"{row.use_count} (last {format_ts(row.last_used) if row.last_used else '–'})"),
    ]
    if row.imported_from is not None:
        facts += [
            (
                "author",
                short_peer(row.source_node_id, labels, short=False) if row.source_node_id else "–",
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
                short_peer(e.source_node_id, labels, short=False),
                " via ",
                short_peer(e.via_node_id, labels, short=False),
                " at ",
                when(e.received_at),
                el("code", f" {e.content_hash[:12]}") if e.content_hash else "",
            )
            for e in row.provenance
        ),
        id="provenance",
    )
    history = el(
        "table",
        sort_header("time", "event", "actor", "confidence", "reason"),
        el(
            "tbody",
            *(
                el(
                    "tr",
                    el("td", when(e.at), data_sort=format_ts(e.at)),
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
