"""Each console page rendered from plain values: HTML out, no I/O.

``page`` wraps a body in the shared layout (navigation, stylesheet, script, and the CSRF token
every state-changing form carries). The body renderers take what the operator API returns:
a ``HealthReport``, reputation table ``ReputationRow``s and ``ReputationEvent`` history (the
quarantine and lesson pages are ``lamarck.node.console.lesson_pages``). Every value is escaped
(it may come from a peer). Tables marked ``sortable`` are sorted by ``static/console.js`` on a
header click (by each cell's ``data-sort``); ``filterable`` tables filter rows by their
``data-*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from lamarck.health.figures import Finding, HealthReport
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
from lamarck.node.console.widgets import (
    CSRF_FIELD,
    NO_LABELS,
    SHORT_ID_CHARS,
    Labels,
    short_peer,
    sort_header,
    when,
)
from lamarck.proto.labels import with_label
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.table import TOP_PARTS, ReputationRow, global_text, named_parts, parts_text

__all__ = [
    "CSRF_FIELD",
    "NAV",
    "health_page",
    "overview_page",
    "page",
    "peer_page",
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
                when(report.generated_at),
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
    labels: Labels = NO_LABELS,
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
                    short_peer(r.peer, labels, short=False),
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
        sort_header(
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
    labels: Labels = NO_LABELS,
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
        sort_header("time", "event", "established by", "weight", "domain", "record", "reason"),
        el(
            "tbody",
            *(
                el(
                    "tr",
                    el("td", when(e.at), data_sort=format_ts(e.at)),
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
