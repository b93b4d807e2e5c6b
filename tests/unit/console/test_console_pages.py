"""Console pages render from plain values: escaped, self-contained, with forgery-proof forms."""

from __future__ import annotations

import dataclasses
import math
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest

from lamarck.consensus.corroboration import EvidenceClass, Support
from lamarck.domain.rows import (
    LessonEvent,
    LessonStatus,
    ProvenanceEntry,
    QuarantineRow,
)
from lamarck.errors import ConfigError, InvalidRecord, NotFound
from lamarck.health.figures import CalibrationBucket, Finding, Severity
from lamarck.health.inputs import HealthInputs, Prediction
from lamarck.health.params import HealthParams
from lamarck.health.report import health_report
from lamarck.learning.influence import LessonEvidence
from lamarck.node.console.activity import activity_timeline, bins_for_age, window_start
from lamarck.node.console.assets import CONTENT_TYPES, asset
from lamarck.node.console.http import MAX_ACTIVITY_BINS, ConsoleParams
from lamarck.node.console.lesson_pages import (
    HeldDetails,
    lesson_page,
    lessons_page,
    quarantine_page,
)
from lamarck.node.console.markup import Markup, attrs, el, esc, void
from lamarck.node.console.pages import (
    NAV,
    health_page,
    overview_page,
    page,
    peer_page,
    reputation_page,
)
from lamarck.node.console.plots import (
    PlotParams,
    bar_chart,
    calibration_curve,
    line_chart,
    rate_series,
    timeline_chart,
)
from lamarck.node.console.series import evidence_counts, quarantine_ages, score_series
from lamarck.node.console.widgets import CSRF_FIELD, SHORT_ID_CHARS
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand, ScorePart
from lamarck.reputation.table import ReputationRow
from tests.factories import lesson_row

NOW = datetime(2026, 3, 1, tzinfo=UTC)
HOSTILE = '<script>alert("x")</script>'
PLOTS = PlotParams()


class Tags(HTMLParser):
    """Collects start tags with their attributes, and checks every non-void tag is closed."""

    VOID = frozenset({"meta", "link", "input", "br", "img"})

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attributes)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()


def parse(markup: str) -> Tags:
    parser = Tags()
    parser.feed(markup)
    parser.close()
    assert parser.open == [], f"unclosed: {parser.open}"
    return parser


def find(tags: Tags, tag: str, **want: str) -> list[dict[str, str | None]]:
    return [a for t, a in tags.tags if t == tag and all(a.get(k) == v for k, v in want.items())]


# -- markup ------------------------------------------------------------------------------------


def test_text_and_attributes_are_escaped_and_markup_is_not_escaped_twice() -> None:
    assert esc(HOSTILE) == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
    assert esc(Markup("<b>")) == "<b>"
    assert attrs({"title": '"x"', "hidden": True, "gone": None, "off": False}) == (
        ' title="&quot;x&quot;" hidden'
    )
    assert el("td", HOSTILE, class_="c", data_sort="1") == (
        '<td class="c" data-sort="1">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>'
    )
    assert void("input", type="hidden", value="<") == '<input type="hidden" value="&lt;">'


# -- layout --------------------------------------------------------------------------------------


def test_a_page_has_the_menu_the_active_page_the_token_and_only_local_assets() -> None:
    doc = page("Health", "health", el("p", "body"), csrf_token='tok"en')
    tags = parse(doc)
    assert doc.startswith("<!doctype html>")
    assert [a["href"] for a in find(tags, "a")] == [path for _, path, _ in NAV]
    assert find(tags, "a", href="/health")[0]["aria-current"] == "page"
    assert find(tags, "meta", name=CSRF_FIELD)[0]["content"] == 'tok"en'
    assert find(tags, "link")[0]["href"] == "/static/console.css"
    assert find(tags, "script")[0]["src"] == "/static/console.js"
    assert not re.search(r"(src|href)=\"(https?:)?//", doc)


def test_the_overview_lists_facts_and_warnings_escaped() -> None:
    body = overview_page(
        [("admission", "admitted by lmk1abc"), ("peers", HOSTILE)],
        [Finding("no_external_validation", Severity.CRITICAL, "No external validations")],
    )
    parse(body)
    assert "admitted by lmk1abc" in body
    assert HOSTILE not in body
    assert 'class="finding critical"' in body


# -- health --------------------------------------------------------------------------------------


def test_the_health_page_draws_bands_calibration_transfer_and_velocity() -> None:
    rows = [
        lesson_row("a", at=NOW, content="x", operation="op", confidence=0.8, last_used=NOW),
        lesson_row("b", at=NOW, content="y", operation="op", confidence=0.3, last_used=NOW),
    ]
    predictions = [
        Prediction("op", True, c, NOW - timedelta(days=1), actual_success=ok)
        for c, ok in ((0.85, True), (0.85, False), (0.25, True))
    ]
    report = health_report(HealthInputs(rows, (), predictions), HealthParams(), NOW)
    activity = activity_timeline(
        [NOW - timedelta(hours=1)], [(NOW - timedelta(days=2), "bad_signature")], now=NOW, p=DAYS
    )
    body = health_page(report, p=PLOTS, activity=activity)
    tags = parse(body)
    assert {a.get("id") for t, a in tags.tags if t == "section"} >= {
        "distribution",
        "calibration",
        "validity",
        "transfer",
        "velocity",
        "activity",
    }
    assert len(find(tags, "circle")) == 2  # one point per non-empty confidence bin
    assert "No external validations" in body
    assert 'class="finding critical"' in body
    assert len(find(tags, "svg")) == 6
    assert "1 imported, 1 rejected in 7 bins of 1 day" in body
    # The calibration plot has its ticks, valued, on both axes.
    calibration = body[body.index('id="calibration"') : body.index('id="validity"')]
    ticks = re.findall(r'class="tick-label (x|y)"[^>]*>([0-9.]+)<', calibration)
    assert sorted(v for a, v in ticks if a == "x") == ["0", "0.25", "0.5", "0.75", "1"]
    assert sorted(v for a, v in ticks if a == "y") == ["0", "0.25", "0.5", "0.75", "1"]
    # Imports and refusals per minute, one line per series, in the rates section.
    assert 'id="rates"' in body and 'data-series="refused: bad_signature"' in body


# -- imports and rejections over time ----------------------------------------------------------

DAYS = ConsoleParams(activity_window_h=7 * 24, activity_bin_h=24)
HOURS = ConsoleParams(activity_window_h=6, activity_bin_h=1)


def test_activity_bins_by_day_end_with_the_day_holding_now_and_drop_what_is_outside() -> None:
    now = datetime(2026, 3, 7, 15, 30, tzinfo=UTC)
    imports = [
        datetime(2026, 3, 7, 0, 0, tzinfo=UTC),  # the first instant of today's bin
        datetime(2026, 3, 6, 23, 59, tzinfo=UTC),  # yesterday's last minute
        datetime(2026, 3, 1, 0, 0, tzinfo=UTC),  # the oldest bin's first instant
        datetime(2026, 2, 28, 23, 59, tzinfo=UTC),  # just before the window
        datetime(2026, 3, 8, 0, 0, tzinfo=UTC),  # ahead of now's bin (clock skew)
    ]
    rejections = [(datetime(2026, 3, 6, 8, tzinfo=UTC), r) for r in ("stale", "bad", "stale")]
    timeline = activity_timeline(imports, rejections, now=now, p=DAYS)
    assert [b.start.day for b in timeline.bins] == [1, 2, 3, 4, 5, 6, 7]
    assert timeline.bins[-1].end == datetime(2026, 3, 8, tzinfo=UTC)
    assert [b.imports for b in timeline.bins] == [1, 0, 0, 0, 0, 1, 1]
    assert timeline.bins[5].rejected == {"bad": 1, "stale": 2}
    assert (timeline.imports, timeline.rejections) == (3, 3)
    assert window_start(now, DAYS) == datetime(2026, 3, 1, tzinfo=UTC)


def test_activity_bins_by_hour_over_a_short_window() -> None:
    now = datetime(2026, 3, 7, 15, 30, tzinfo=UTC)
    imports = [now - timedelta(minutes=m) for m in (0, 20, 45, 61, 400)]
    timeline = activity_timeline(imports, [], now=now, p=HOURS)
    assert [b.start.hour for b in timeline.bins] == [10, 11, 12, 13, 14, 15]
    assert [b.imports for b in timeline.bins] == [0, 0, 0, 0, 2, 2]


def test_activity_refuses_naive_times() -> None:
    with pytest.raises(InvalidRecord) as e:
        activity_timeline([datetime(2026, 3, 1)], [], now=NOW, p=DAYS)
    assert e.value.reason == "naive_timestamp"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"activity_bin_h": 0.0}, "activity_bin_h"),
        ({"activity_window_h": math.inf}, "activity_window_h"),
        ({"activity_window_h": 24, "activity_bin_h": 48}, "activity_bin_h"),
        ({"activity_window_h": MAX_ACTIVITY_BINS + 1, "activity_bin_h": 1}, None),
    ],
)
def test_console_params_refuse_an_impossible_activity_window(
    kwargs: dict[str, float], field: str | None
) -> None:
    with pytest.raises(ConfigError) as e:
        ConsoleParams(**kwargs)
    assert e.value.details.get("field") == (field or "activity_window_h")


def test_the_time_plot_draws_a_column_pair_per_bin_scaled_to_the_busiest() -> None:
    now = datetime(2026, 3, 7, 12, tzinfo=UTC)
    imports = [now] * 4 + [now - timedelta(days=1)] * 2
    timeline = activity_timeline(imports, [(now, "bad_signature")], now=now, p=DAYS)
    chart = timeline_chart(timeline, p=PLOTS)
    tags = parse(chart)
    imported = find(tags, "rect", **{"class": "imported"})[1:]  # after the legend's swatch
    rejected = find(tags, "rect", **{"class": "rejected"})[1:]
    assert len(imported) == len(rejected) == 7
    heights = [float(r["height"] or 0) for r in imported]
    assert heights[-1] == pytest.approx(PLOTS.timeline_height)  # the busiest bin fills it
    assert heights[-2] == pytest.approx(PLOTS.timeline_height / 2)
    assert [r["data-value"] for r in rejected][-1] == "1"
    assert "1 rejected (bad_signature 1)" in chart
    assert ">03-01<" in chart and "imported (6)" in chart


def test_charts_draw_missing_values_as_na_and_scale_rates_to_the_full_width() -> None:
    chart = bar_chart([("a", 0.5), ("b", None)], title="t", p=PLOTS, percent=True)
    tags = parse(chart)
    [bar] = find(tags, "rect")
    assert float(bar["width"] or 0) == pytest.approx((PLOTS.width - PLOTS.label_width) / 2)
    assert bar["data-value"] == "50.0%"
    assert ">n/a<" in chart
    empty = calibration_curve([], p=PLOTS)
    assert find(parse(empty), "line")  # the diagonal is drawn even without data
    point = calibration_curve([CalibrationBucket(0.7, 0.8, 4, 0.75, 1.0)], p=PLOTS)
    [circle] = find(parse(point), "circle")
    assert float(circle["cy"] or 0) == pytest.approx(PLOTS.margin)  # accuracy 1.0 at the top


@pytest.mark.parametrize(
    "kwargs",
    [{"width": 0.0}, {"bar_height": math.nan}, {"label_width": 500.0}, {"min_radius": 10.0}],
)
def test_plot_params_refuse_impossible_geometry(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        PlotParams(**kwargs)


# -- reputation ----------------------------------------------------------------------------------


def breakdown(
    node_id: str, score: float, band: PeerBand, domains: dict[str, float] | None = None
) -> ReputationRow:
    return ReputationRow(
        peer=node_id,
        principal="",
        band=band,
        score=score,
        parts={ScorePart.P0_ADMISSION.value: 0.0, ScorePart.P1_REALITY_CONFIRMED.value: score},
        pairwise=0.7,
        global_trust=0.25,
        domains=domains or {},
    )


def test_the_reputation_table_is_sortable_and_filterable_by_band_and_domain() -> None:
    body = reputation_page(
        [
            breakdown("lmk1a", 0.9, PeerBand.TRUSTED, {"deploy": 0.8, "db": 0.6}),
            breakdown("lmk1b", 0.3, PeerBand.GRAYLISTED),
        ]
    )
    tags = parse(body)
    assert find(tags, "table", id="reputation")[0]["class"] == "sortable filterable"
    rows = [a for a in find(tags, "tr") if "data-band" in a]
    assert [a["data-band"] for a in rows] == ["trusted", "graylisted"]
    assert [a["data-domains"] for a in rows] == ["db deploy", ""]
    assert [a["value"] for a in find(tags, "option")] == [
        "",
        "graylisted",
        "trusted",
        "",
        "db",
        "deploy",
    ]
    assert [a.get("data-match") for a in find(tags, "select")] == [None, "word"]
    assert find(tags, "a", href="/reputation/lmk1a")


def test_a_peer_page_shows_score_parts_and_events_with_reasons_newest_first() -> None:
    events = [
        ReputationEvent(
            EventKind.LESSON_CONFIRMED,
            "lmk1a",
            NOW - timedelta(days=2),
            0.8,
            "f" * 64,
            detail="old",
        ),
        ReputationEvent(EventKind.REJECTED, "lmk1a", NOW, detail=HOSTILE),
    ]
    body = peer_page(breakdown("lmk1a", 0.9, PeerBand.TRUSTED), events)
    parse(body)
    # Parts by name, zero parts (p0 here) left out.
    assert "reality confirmed" in body and "admission" not in body
    assert "pairwise trust" in body and "0.2500" in body
    assert body.index("rejected") < body.index("lesson_confirmed")
    assert HOSTILE not in body
    assert "<td>reality</td>" in body  # who established the confirmation
    assert "<code>ffffffffffff</code>" in body and ">old<" in body


def test_a_graylisted_row_is_marked_and_says_why() -> None:
    bad = ReputationRow(
        peer="lmk1bad",
        principal="",
        band=PeerBand.GRAYLISTED,
        score=0.05,
        parts={ScorePart.P5_POISONED.value: -0.4, ScorePart.P7_REPLAY.value: -0.05},
    )
    tags = parse(reputation_page([breakdown("lmk1a", 0.9, PeerBand.TRUSTED), bad]))
    rows = [a for a in find(tags, "tr") if "data-band" in a]
    assert [r["class"] for r in rows] == ["band-trusted", "band-graylisted"]
    body = reputation_page([bad])
    assert "poisoned -0.400, replay -0.050" in body


def test_a_peer_pages_parts_are_ordered_by_effect_not_by_name() -> None:
    parts = {f"p{k}_part{k}": 0.0 for k in range(14)}
    parts |= {"p2_reality_contradicted": -0.05, "p10_operator_contradicted": -0.3}
    row = ReputationRow(peer="lmk1a", principal="", band=PeerBand.NEUTRAL, score=0.2, parts=parts)
    body = peer_page(row, [])
    assert body.index("operator contradicted") < body.index("reality contradicted")
    assert "part3" not in body  # zero parts are hidden


# -- quarantine ----------------------------------------------------------------------------------


def held(qid: str, state: str = "pending") -> QuarantineRow:
    return QuarantineRow(qid, "hash", "lmk1src", ("unknown_signer", HOSTILE), NOW, b"{}", state)


def test_pending_records_carry_approve_and_reject_forms_with_the_token_and_a_note() -> None:
    body = quarantine_page([held("q1"), held("q2", state="approved")], csrf_token="t0k")
    tags = parse(body)
    forms = find(tags, "form", method="post")
    assert [f["action"] for f in forms] == ["/quarantine/q1/approve", "/quarantine/q1/reject"]
    tokens = find(tags, "input", type="hidden", name=CSRF_FIELD)
    assert [t["value"] for t in tokens] == ["t0k", "t0k"]
    assert all("required" in a for a in find(tags, "input", name="note"))
    assert 'class="state approved"' in body
    assert HOSTILE not in body and "unknown_signer" in body
    assert body.count(">not asked<") == 2


def vote(voter: str, verdict: str, counted: bool = True, ignored: str = "") -> dict[str, object]:
    return {
        "voter_id": voter,
        "verdict": verdict,
        "confidence": 0.9,
        "outcome_ids": ["o1", "o2"] if verdict != "abstain" else [],
        "created_at": "2026-03-01T00:00:00Z",
        "counted": counted,
        "ignored": ignored,
    }


def test_a_held_record_shows_the_confidence_it_would_be_stored_at_and_its_quorum() -> None:
    row = QuarantineRow(
        "q1",
        "hash",
        "lmk1src",
        ("awaiting_quorum",),
        NOW,
        b"{}",
        confidence=0.42,
        transfer_rule="trusted_peer",
    )
    quorum = {
        "state": "pending",
        "rounds": 2,
        "reason": "awaiting_votes",
        "next_at": "2026-03-01T00:05:00Z",
        "counts": {"validate": 3, "contradict": 1, "abstain": 0, "accept_at": 5, "reject_at": 3},
        "votes": [
            vote("lmk1v1", "confirm"),
            vote("lmk1v2", "contradict"),
            vote(HOSTILE, "confirm", counted=False, ignored="forged"),
        ],
        "certificate": None,
    }
    details = {"q1": HeldDetails(preview="Rotate keys", quorum=quorum)}
    body = quarantine_page([row], csrf_token="t", details=details)
    tags = parse(body)
    assert ">0.42<" in body and "trusted_peer" in body
    assert "validate 3 · contradict 1 · abstain 0 (accept at 5, reject at 3)" in body
    assert "none yet (awaiting votes)" in body and "Rotate keys" in body
    assert [a["data-verdict"] for a in find(tags, "tr") if "data-verdict" in a] == [
        "confirm",
        "contradict",
        "confirm",
    ]
    assert "no: forged" in body and HOSTILE not in body
    assert find(tags, "a", href="/reputation/lmk1v2")
    accepted = {**quorum, "state": "accepted", "certificate": {"votes": [{}, {}, {}, {}, {}]}}
    body = quarantine_page([row], csrf_token="t", details={"q1": HeldDetails(quorum=accepted)})
    assert "made here: the record was stored with it (5 signed votes)" in body


def test_an_empty_queue_says_so() -> None:
    assert "Nothing is held" in quarantine_page([], csrf_token="t")


# -- lessons -------------------------------------------------------------------------------------


def test_lessons_are_filterable_by_scope_status_and_origin() -> None:
    local = lesson_row("l1", at=NOW, content=HOSTILE, operation="git push", confidence=0.7)
    imported = lesson_row(
        "l2",
        at=NOW,
        content="use -n",
        operation="rm",
        scope="project:ab",
        status=LessonStatus.RETIRED,
        confidence=0.1,
        imported_from="lmk1x",
    )
    evidence = {
        "l2": LessonEvidence(EvidenceClass.UNVERIFIED, Support(), imported=True),
    }
    body = lessons_page([local, imported], evidence)
    tags = parse(body)
    rows = [a for a in find(tags, "tr") if "data-origin" in a]
    assert [(r["data-origin"], r["data-status"], r["data-scope"]) for r in rows] == [
        ("local", "active", "global"),
        ("imported", "retired", "project:ab"),
    ]
    assert [r["data-evidence"] for r in rows] == ["unknown", "unverified"]
    assert "unverified, from 1 peer" in body
    assert {a["data-filter"] for a in find(tags, "select")} == {
        "scope",
        "status",
        "origin",
        "evidence",
    }
    assert find(tags, "input", type="search")
    assert HOSTILE not in body
    # A project's 64-character digest is cut so the lesson text keeps the room.
    long_scope = dataclasses.replace(imported, scope="project:" + "ab" * 32)
    cell = lessons_page([long_scope], evidence)
    assert ">project:abababab…<" in cell and "ab" * 32 in cell  # whole in the title only


def test_a_lesson_page_shows_evidence_provenance_and_history() -> None:
    row = lesson_row(
        "l2",
        at=NOW,
        content="use -n",
        operation="rm",
        confidence=0.6,
        evidence=("outcome-1",),
        imported_from="lmk1x",
        provenance=(ProvenanceEntry("lmk1x", "lmk1y", NOW, "h"),),
    )
    events = [
        LessonEvent("l2", NOW, "imported", "lmk1x", None, 0.4),
        LessonEvent("l2", NOW, "confirmed", "loop", 0.4, 0.6, reason="similarity=0.95"),
    ]
    body = lesson_page(
        row,
        events,
        LessonEvidence(
            EvidenceClass.CORROBORATED,
            Support(confirming=frozenset({"a", "b"})),
            imported=row.imported_from is not None,
        ),
    )
    assert "corroborated by 2 independent principals" in body
    tags = parse(body)
    assert "outcome-1" in body
    assert find(tags, "a", href="/reputation/lmk1x") and find(tags, "a", href="/reputation/lmk1y")
    assert "0.40 → 0.60" in body and ">0.40<" in body
    assert 'imported from <a href="/reputation/lmk1x"' in body
    assert find(tags, "ul", id="provenance") and find(tags, "table", id="history")


# -- assets --------------------------------------------------------------------------------------


def test_every_listed_asset_ships_and_nothing_else_is_served() -> None:
    for name in CONTENT_TYPES:
        data = asset(name)
        assert data and b"http://" not in data and b"https://" not in data
    with pytest.raises(NotFound):
        asset("../pages.py")
    with pytest.raises(NotFound):
        asset("console.html")


def test_every_page_shows_a_peers_label_beside_its_id_escaped_never_instead() -> None:
    peer, other = "lmk1" + "a" * 32, "lmk1" + "b" * 32
    labels = {peer: "node2 <b>", other: "node3"}
    table = reputation_page([breakdown(peer, 0.9, PeerBand.TRUSTED)], labels)
    assert '<span class="peer-label">node2 &lt;b&gt;</span>' in table
    assert f'<code class="peer-id">{peer}</code>' in table
    page = peer_page(breakdown(peer, 0.9, PeerBand.TRUSTED), [], labels)
    assert "node2 &lt;b&gt;" in page and peer in page
    held = QuarantineRow(
        id="q1",
        content_hash="h" * 64,
        source_node_id=other,
        reasons=("low_reputation",),
        received_at=datetime(2026, 1, 1, tzinfo=UTC),
        signed_record=b"",
    )
    queue = quarantine_page([held], csrf_token="t", labels=labels)
    assert '<span class="peer-label">node3</span>' in queue
    assert f'<code class="peer-id">{other[:SHORT_ID_CHARS]}…</code>' in queue
    # No label known: the id alone, no empty label element.
    bare = reputation_page([breakdown(peer, 0.9, PeerBand.TRUSTED)])
    assert "peer-label" not in bare and peer in bare


# -- charts that follow the node's age, and the operator's plots ---------------------------


@pytest.mark.parametrize(
    ("age", "bin_minutes", "bins"),
    [
        (timedelta(0), 1, 10),  # a node just started: minute bins, never a single bar
        (timedelta(minutes=7), 1, 10),
        (timedelta(minutes=50), 1, 51),
        (timedelta(hours=3), 5, 37),
        (timedelta(hours=20), 60, 21),
        (timedelta(days=3), 360, 13),
        (timedelta(days=30), 1440, 14),  # older than the window: days, the window's 14
    ],
)
def test_activity_bins_follow_the_nodes_age(age: timedelta, bin_minutes: int, bins: int) -> None:
    fitted = bins_for_age(age, ConsoleParams())
    assert round(fitted.activity_bin_h * 60) == bin_minutes
    now = datetime(2026, 3, 7, 15, 30, 20, tzinfo=UTC)
    timeline = activity_timeline([now - age], [], now=now, p=fitted)
    assert len(timeline.bins) == bins
    assert timeline.bins[-1].start <= now < timeline.bins[-1].end
    if age <= timedelta(days=14):
        assert timeline.imports == 1  # the oldest event is inside the window


def test_a_young_nodes_activity_is_drawn_in_minutes_with_clock_labels() -> None:
    now = datetime(2026, 3, 7, 15, 30, 20, tzinfo=UTC)
    imports = [now - timedelta(minutes=m) for m in (0, 1, 1, 6)]
    fitted = bins_for_age(timedelta(minutes=6), ConsoleParams())
    timeline = activity_timeline(imports, [(now, "stale")], now=now, p=fitted)
    chart = timeline_chart(timeline, p=PLOTS)
    assert ">15:21<" in chart  # minute bins are labelled by the clock alone
    assert [b.imports for b in timeline.bins][-7:] == [1, 0, 0, 0, 0, 2, 1]
    rates = dict(rate_series(timeline))
    assert [v for _, v in rates["imported"]][-2:] == [2.0, 1.0]  # per minute
    assert [v for _, v in rates["refused: stale"]][-1] == 1.0


def test_a_line_chart_has_valued_ticks_a_legend_and_a_line_per_series() -> None:
    t0 = datetime(2026, 3, 7, 12, tzinfo=UTC)
    chart = line_chart(
        [("a", [(t0, 0.2), (t0 + timedelta(hours=1), 0.8)]), ("b", [(t0, 0.5)])],
        title="scores",
        p=PLOTS,
        start=t0,
        end=t0 + timedelta(hours=1),
        y_max=1.0,
    )
    tags = parse(chart)
    [line] = find(tags, "polyline")
    assert line["data-series"] == "a" and line["data-points"] == "2"
    assert find(tags, "circle")[0]["data-series"] == "b"  # one point: a dot
    assert ">12:00<" in chart and ">13:00<" in chart
    assert ">0<" in chart and ">0.5<" in chart and ">1<" in chart
    assert 'class="legend">a<' in chart and 'class="legend">b<' in chart


def test_the_score_over_time_replays_the_books_rule_and_ends_at_the_books_score() -> None:
    params = ReputationParams()
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    events = [
        ReputationEvent(EventKind.LESSON_CONTRADICTED, "lmk1p", t0 + timedelta(hours=h))
        for h in (2, 1)
    ]
    line = score_series("lmk1p", events, params, now=t0 + timedelta(days=1), current=0.3)
    assert [at for at, _ in line] == [t0 + timedelta(hours=h) for h in (1, 1, 2, 24)]
    assert line[0][1] == pytest.approx(params.initial_score)
    assert line[1][1] < line[0][1] and line[2][1] < line[1][1]  # each contradiction costs
    assert line[-1][1] == 0.3
    assert score_series("lmk1p", [], params, now=t0, current=0.5) == [(t0, 0.5)]


def test_quarantine_ages_and_evidence_classes_are_counted_per_bar() -> None:
    now = datetime(2026, 3, 7, tzinfo=UTC)
    waits = [timedelta(minutes=2), timedelta(minutes=30), timedelta(hours=30), timedelta(days=9)]
    ages = dict(quarantine_ages([now - w for w in waits], now))
    assert ages == {
        "< 10 min": 1,
        "10-60 min": 1,
        "1-6 h": 0,
        "6-24 h": 0,
        "1-7 days": 1,
        "> 7 days": 1,
    }
    classes = [EvidenceClass.UNVERIFIED, EvidenceClass.PROVEN_HERE, EvidenceClass.UNVERIFIED]
    assert evidence_counts(classes) == [
        ("proven here", 1.0),
        ("corroborated", 0.0),
        ("unverified", 2.0),
    ]
