"""The health report for people and machines: plain text, JSON, and flat gauge values.

``report_to_json`` is the one wire shape (the operator RPC can carry it as text, ``lamarck
health --json`` prints it, the console page reads it); ``report_from_json`` reads it back;
``gauge_values`` flattens every numeric figure to ``name -> value`` for Prometheus (a figure
without data is left out rather than exported as 0); ``render_text`` is the CLI's report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from lamarck.errors import InvalidRecord
from lamarck.health.figures import (
    Adaptation,
    CalibrationBucket,
    CompoundLearning,
    ConfidenceDistribution,
    Finding,
    HealthReport,
    PredictionFigures,
    Retention,
    Severity,
    TransferBucket,
    UpdateVelocity,
    Usefulness,
    ValidationFigures,
)
from lamarck.proto.timefmt import format_ts, parse_ts

__all__ = [
    "JSON_VERSION",
    "gauge_values",
    "render_text",
    "report_from_json",
    "report_to_json",
]

#: Version of the JSON shape; bumped on any incompatible change.
JSON_VERSION = 1

_SECTIONS: tuple[tuple[str, type[Any]], ...] = (
    ("distribution", ConfidenceDistribution),
    ("retention", Retention),
    ("adaptation", Adaptation),
    ("compound", CompoundLearning),
    ("validation", ValidationFigures),
    ("usefulness", Usefulness),
    ("velocity", UpdateVelocity),
)


def _fields(obj: Any) -> dict[str, Any]:
    """A figures dataclass as a JSON-ready dict (tuples become lists)."""
    out: dict[str, Any] = {}
    for name in obj.__dataclass_fields__:
        value = getattr(obj, name)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _finding(f: Finding) -> dict[str, str]:
    """A finding as JSON."""
    return {"code": f.code, "severity": f.severity.value, "message": f.message}


def report_to_json(report: HealthReport) -> dict[str, Any]:
    """The report as a JSON-ready dict (``json.dumps`` it as is)."""
    pred = report.predictions
    out: dict[str, Any] = {
        "version": JSON_VERSION,
        "generated_at": format_ts(report.generated_at),
        "window_days": report.window_days,
        "healthy": report.healthy,
        "warnings": [_finding(f) for f in report.warnings],
        "strengths": [_finding(f) for f in report.strengths],
    }
    for name, _ in _SECTIONS:
        out[name] = _fields(getattr(report, name))
    out["predictions"] = {
        **{k: v for k, v in _fields(pred).items() if k != "buckets"},
        "buckets": [_fields(b) for b in pred.buckets],
    }
    out["transfer"] = [_fields(b) for b in report.transfer]
    return out


def _build(kind: type[Any], data: Any, where: str) -> Any:
    """Build a figures dataclass from its JSON dict, refusing missing or extra keys."""
    if not isinstance(data, Mapping):
        raise InvalidRecord(f"health report {where} must be an object", reason="bad_health_json")
    names = set(kind.__dataclass_fields__)
    if set(data) != names:
        raise InvalidRecord(
            f"health report {where} has keys {sorted(data)}, expected {sorted(names)}",
            reason="bad_health_json",
        )
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return kind(**values)


def report_from_json(data: Mapping[str, Any]) -> HealthReport:
    """Read back ``report_to_json``'s dict (the CLI and console read the RPC's answer so)."""
    try:
        if data.get("version") != JSON_VERSION:
            raise InvalidRecord(
                f"health report version {data.get('version')!r} is not {JSON_VERSION}",
                reason="bad_health_json",
            )
        pred = dict(data["predictions"])
        buckets = tuple(_build(CalibrationBucket, b, "bucket") for b in pred.pop("buckets"))
        sections = {name: _build(kind, data[name], name) for name, kind in _SECTIONS}
        return HealthReport(
            generated_at=parse_ts(data["generated_at"]),
            window_days=float(data["window_days"]),
            predictions=PredictionFigures(**{**pred, "buckets": buckets}),
            transfer=tuple(_build(TransferBucket, b, "transfer") for b in data["transfer"]),
            warnings=tuple(_read_finding(f) for f in data["warnings"]),
            strengths=tuple(_read_finding(f) for f in data["strengths"]),
            **sections,
        )
    except (KeyError, TypeError, ValueError) as exc:
        # A missing key, a wrong type or an unknown severity: the whole document is invalid.
        raise InvalidRecord(f"malformed health report: {exc}", reason="bad_health_json") from exc


def _read_finding(data: Mapping[str, Any]) -> Finding:
    """A finding from JSON."""
    return Finding(str(data["code"]), Severity(data["severity"]), str(data["message"]))


def gauge_values(report: HealthReport) -> dict[str, float]:
    """Every numeric figure as ``section_field -> value``, for one labelled Prometheus gauge.

    Names are stable: ``distribution_high``, ``validation_contradiction_rate``,
    ``transfer_similar_rate``, ``calibration_bucket_70_accuracy`` (by lower edge, percent),
    ``warning_<code>`` (1 when raised), ``healthy``. Figures without data are left out.
    """
    out: dict[str, float] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, bool):
            out[name] = 1.0 if value else 0.0
        elif isinstance(value, int | float) and math.isfinite(value):
            out[name] = float(value)

    for section, _ in _SECTIONS:
        for key, value in _fields(getattr(report, section)).items():
            put(f"{section}_{key}", value)
    pred = report.predictions
    for key in ("total", "resolved", "correct", "accuracy", "calibration"):
        put(f"predictions_{key}", getattr(pred, key))
    for b in pred.buckets:
        # Named by the bin's lower edge in percent: bins are equal-width, so the edge is stable.
        edge = round(b.lo * 100)
        put(f"calibration_bucket_{edge}_count", b.count)
        put(f"calibration_bucket_{edge}_mean_confidence", b.mean_confidence)
        put(f"calibration_bucket_{edge}_accuracy", b.accuracy)
    for t in report.transfer:
        put(f"transfer_{t.name}_attempts", t.attempts)
        put(f"transfer_{t.name}_successes", t.successes)
        put(f"transfer_{t.name}_rate", t.rate)
    for f in report.warnings:
        put(f"warning_{f.code}", True)
    put("healthy", report.healthy)
    return out


def _pct(value: float | None) -> str:
    """A rate as a percentage, or "n/a"."""
    return "n/a" if value is None else f"{value:.1%}"


def _num(value: float | None, unit: str) -> str:
    """A duration with its unit, or "n/a"."""
    return "n/a" if value is None else f"{value:.1f} {unit}"


def render_text(report: HealthReport) -> str:
    """The report as plain text for a terminal (the seed's ``print_report`` layout)."""
    d, r, a, c = report.distribution, report.retention, report.adaptation, report.compound
    p, v, u, w = report.predictions, report.validation, report.usefulness, report.velocity
    lines = [
        f"Health report at {format_ts(report.generated_at)} (window {report.window_days:g} days)",
        "",
        "Memory distribution (live lessons)",
        f"  total {d.total}   high {d.high}   medium {d.medium}   low {d.low}",
        "",
        "Internal learning",
        f"  prediction accuracy   {_pct(p.accuracy)} of {p.resolved} resolved",
        f"  calibration           {_pct(p.calibration)}",
    ]
    for b in p.buckets:
        lines.append(
            f"    confidence {b.lo:.1f}-{b.hi:.1f}: {b.count} predictions, "
            f"mean confidence {b.mean_confidence:.2f}, accuracy {b.accuracy:.1%}"
        )
    lines += [
        f"  retention             {_pct(r.rate)} ({r.retained} retained, {r.retired} retired, "
        f"{r.stale} stale of {r.live} live)",
        f"  adaptation            {_num(a.mean_days, 'days')} mean, "
        f"{_num(a.median_days, 'days')} median ({a.adapted} of {a.contexts} contexts)",
        f"  compound learning     {_pct(c.rate)} (early {_num(c.early_days, 'days')}, "
        f"late {_num(c.late_days, 'days')}, {c.eligible} lessons)",
        "",
        "External validity",
        f"  external validations  {v.total}",
        f"  confirmation rate     {_pct(v.confirmation_rate)}",
        f"  contradiction rate    {_pct(v.contradiction_rate)}",
        f"  context mismatch rate {_pct(v.context_mismatch_rate)}",
        f"  external error detection {_pct(v.external_error_detection)}",
        f"  overconfident errors  {v.overconfident_errors}",
        "  transfer success      "
        + "   ".join(f"{t.name} {_pct(t.rate)} ({t.attempts})" for t in report.transfer),
        f"  knowledge usefulness  {_pct(u.rate)} ({u.unused} unused, {u.stale} stale, "
        f"of {u.high_confidence} high-confidence)",
        f"  update velocity       {_num(w.mean_hours, 'h')} mean, "
        f"{_num(w.median_hours, 'h')} median, {_pct(w.responsive_share)} responsive "
        f"({w.contradictions} contradictions)",
        "",
        "Assessment",
    ]
    for f in report.warnings:
        marker = "CRITICAL" if f.severity is Severity.CRITICAL else "WARNING"
        lines.append(f"  {marker}: {f.message}")
    for f in report.strengths:
        lines.append(f"  ok: {f.message}")
    if report.healthy:
        lines.append("  healthy: no warnings")
    return "\n".join(lines) + "\n"
