"""``lamarck lessons list|show|edit|retire|history``: a node's lessons through its agent API."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal

import typer

from lamarck.cli.connect import client_for, known_labels
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, key_value_table, print_table
from lamarck.client import Client, HistoryEntry, Lesson, LessonPage
from lamarck.proto.labels import with_label
from lamarck.proto.timefmt import format_ts

__all__ = [
    "LESSON_STATUSES",
    "CategoryChoice",
    "StatusOption",
    "app",
    "edit",
    "history",
    "history_json",
    "iter_pages",
    "lesson_json",
    "list_lessons",
    "register",
    "retire",
    "show",
    "statuses_from",
]

#: The life-cycle states of a lesson, in order.
LESSON_STATUSES: tuple[str, ...] = ("claimed", "active", "superseded", "retired")
CategoryChoice = Literal["operation", "situation"]
# Largest page the node serves (agent_service.MAX_PAGE_SIZE); asking for more is capped.
_PAGE = 500

app = typer.Typer(
    name="lessons", help="List, show, edit, retire a node's lessons.", no_args_is_help=True
)

#: ``--status`` (repeatable), checked by :func:`statuses_from` (typer cannot type a repeated
#: option as a list of literals).
StatusOption = Annotated[
    list[str] | None,
    typer.Option(
        "--status",
        metavar="claimed|active|superseded|retired",
        help="Only this status (repeatable).",
        show_default=False,
    ),
]

_IdArgument = Annotated[str, typer.Argument(metavar="ID", help="The lesson's id.")]


def statuses_from(values: Sequence[str] | None) -> tuple[str, ...]:
    """The ``--status`` values, checked; a usage error names the option and the choices."""
    for value in values or ():
        if value not in LESSON_STATUSES:
            raise typer.BadParameter(
                f"{value!r} is not one of {', '.join(LESSON_STATUSES)}",
                param_hint="'--status'",
            )
    return tuple(values or ())


def iter_pages(client: Client, *, limit: int | None = None, **flt: Any) -> Iterator[LessonPage]:
    """Every page of ``client.list_lessons(**flt)``, stopping once ``limit`` lessons came."""
    token, seen = "", 0
    while True:
        size = _PAGE if limit is None else max(1, min(_PAGE, limit - seen))
        page = client.list_lessons(page_size=size, page_token=token, **flt)
        yield page
        seen += len(page.lessons)
        token = page.next_page_token
        if not token or (limit is not None and seen >= limit):
            return


def evidence_json(lesson: Lesson) -> dict[str, Any]:
    """A lesson's evidence for the node: class, independent principals, peers, label."""
    e = lesson.evidence
    return {
        "class": e.evidence_class,
        "independent_principals": e.independent_principals,
        "contradicting_principals": e.contradicting_principals,
        "certified": e.certified,
        "peers": e.peers,
        "authority": e.authority,
        "approved": e.approved,
        "own_principal": e.own_principal,
        "label": e.label,
    }


def evidence_cell(lesson: Lesson) -> str:
    """The evidence column: the class and the principals behind it (the label, without the
    confidence its own column shows)."""
    return lesson.evidence.label.rsplit(", confidence", 1)[0] or lesson.evidence.evidence_class


def origin_cell(lesson: Lesson, labels: Mapping[str, str] | None = None) -> str:
    """Where the lesson came from: ``local`` (learned here) or ``imported`` and from whom
    (its label beside its id, when the node or the fleet names it)."""
    if lesson.origin != "imported":
        return lesson.origin or "local"
    source = lesson.source_node_id
    return "imported from " + with_label(source, (labels or {}).get(source, ""), width=10)


def list_title(shown: int, *, more: bool) -> str:
    """``3 lessons``; when the list was cut at ``--limit``, say that more are on file."""
    noun = "lesson" if shown == 1 else "lessons"
    if more:
        return f"first {shown} {noun}; more on file (raise --limit to see them)"
    return f"{shown} {noun}"


def lesson_json(lesson: Lesson) -> dict[str, Any]:
    """A lesson as plain JSON: timestamps RFC 3339, the record as an object, not bytes."""
    return {
        "id": lesson.id,
        "version": lesson.version,
        "content": lesson.content,
        "confidence": lesson.confidence,
        "status": lesson.status,
        "state": lesson.state,
        "contested_with": list(lesson.contested_with),
        "verified_against": list(lesson.verified_against),
        "evidence": evidence_json(lesson),
        "scope": lesson.scope,
        "operation": lesson.operation,
        "category": lesson.category,
        "memory_type": lesson.memory_type,
        "access_level": lesson.access_level,
        "recipients": list(lesson.recipients),
        "origin": lesson.origin,
        "source_node_id": lesson.source_node_id,
        "tags": list(lesson.tags),
        "evidence_outcome_ids": list(lesson.evidence_outcome_ids),
        "success_count": lesson.success_count,
        "failure_count": lesson.failure_count,
        "created_at": format_ts(lesson.created_at),
        "updated_at": format_ts(lesson.updated_at),
        "superseded_by": lesson.superseded_by,
        "situation": (
            None
            if lesson.situation is None
            else {
                "tool": lesson.situation.tool,
                "subject": lesson.situation.subject,
                "kind": lesson.situation.kind,
                "interactive": lesson.situation.interactive,
                "env_fingerprint": lesson.situation.env_fingerprint,
                "unblock": lesson.situation.unblock,
                "probe": lesson.situation.probe,
                "source": lesson.situation.source,
            }
        ),
        "context": lesson.context,
        "imported_from": list(lesson.imported_from),
        "original_confidence": lesson.original_confidence,
        "shared": lesson.shared,
        "not_shared_reason": lesson.not_shared_reason,
        "record": _record(lesson.record_json),
    }


def _record(raw: bytes) -> dict[str, Any] | None:
    if not raw:
        return None
    value = json.loads(raw)
    return value if isinstance(value, dict) else None


def history_json(entry: HistoryEntry) -> dict[str, Any]:
    """A history entry as plain JSON (the record, when the event changed it, as an object)."""
    return {
        "at": format_ts(entry.at),
        "kind": entry.kind,
        "version": entry.version,
        "status": entry.status,
        "confidence_before": entry.confidence_before,
        "confidence": entry.confidence,
        "outcome_id": entry.outcome_id,
        "actor": entry.actor,
        "reason": entry.reason,
        "record": _record(entry.record_json),
    }


def _lesson_table(title: str, lesson: Lesson) -> None:
    facts = lesson_json(lesson)
    del facts["record"]
    facts["confidence"] = f"{lesson.confidence:.3f}"
    facts["tags"] = ", ".join(lesson.tags)
    facts["evidence_outcome_ids"] = ", ".join(lesson.evidence_outcome_ids)
    facts["imported_from"] = ", ".join(lesson.imported_from)
    facts["context"] = json.dumps(lesson.context, ensure_ascii=False)
    facts["situation"] = json.dumps(facts["situation"]) if lesson.situation else ""
    key_value_table(title, facts)


def _history_table(lesson_id: str, entries: Sequence[HistoryEntry]) -> None:
    print_table(
        f"history of {lesson_id}",
        ["at", "event", "version", "status", "before", "after", "actor", "outcome", "reason"],
        (
            (
                format_ts(e.at),
                e.kind,
                e.version,
                e.status,
                f"{e.confidence_before:.3f}",
                f"{e.confidence:.3f}",
                e.actor,
                e.outcome_id,
                e.reason,
            )
            for e in entries
        ),
        no_wrap=("at", "outcome"),
    )


@app.command("list")
def list_lessons(
    status: StatusOption = None,
    scope: Annotated[
        str | None,
        typer.Option(metavar="global|project:HEX", help="Only this exact scope."),
    ] = None,
    category: Annotated[
        CategoryChoice | None, typer.Option(help="Operation or situation lessons.")
    ] = None,
    min_confidence: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Only lessons at least this confident.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many lessons.")] = 50,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """List lessons, most confident first."""
    statuses = statuses_from(status)  # a usage error before any connection is tried
    where = resolve_home(home)
    with client_for(where) as client:
        # One more than asked: whether the list was cut is said, never left to guess.
        lessons = [
            lesson
            for page in iter_pages(
                client,
                limit=limit + 1,
                statuses=statuses,
                scope=scope,
                category=category,
                min_confidence=min_confidence,
            )
            for lesson in page.lessons
        ]
    more = len(lessons) > limit
    lessons = lessons[:limit]
    if as_json:
        emit_json([lesson_json(lesson) for lesson in lessons])
        return
    labels = known_labels(where)
    print_table(
        list_title(len(lessons), more=more),
        ["id", "v", "status", "state", "evidence", "from", "conf", "scope", "operation", "content"],
        (
            (
                x.id,
                x.version,
                x.status,
                # The lifecycle state, and whether an open conflict keeps it out of advice.
                x.state + (" (contested)" if x.contested else ""),
                # Proven here / corroborated by N / unverified, from N peer(s).
                evidence_cell(x),
                origin_cell(x, labels),
                f"{x.confidence:.2f}",
                x.scope,
                x.operation,
                x.content,
            )
            for x in lessons
        ),
        no_wrap=("id",),
    )


@app.command()
def show(lesson_id: _IdArgument, home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show one lesson as it stands now (its latest version), whether it is shared, and its
    history."""
    # History returns every version of the chain with the record after each change; GetLesson
    # says whether the latest one is shared (by the publisher's own rule) and, if not, why.
    with client_for(resolve_home(home)) as client:
        entries = client.history(lesson_id)
        current = next((e for e in reversed(entries) if e.record_json), None)
        record = _record(current.record_json) if current is not None else None
        latest = client.get_lesson(str((record or {}).get("id", lesson_id)))
    last = entries[-1]
    block = (record or {}).get("lesson") or {}
    facts = {
        "id": (record or {}).get("id", lesson_id),
        "version": last.version,
        "status": last.status,
        "state": latest.state,
        "evidence": evidence_json(latest),
        "contested_with": list(latest.contested_with),
        "verified_against": list(latest.verified_against),
        "confidence": last.confidence,
        "content": (record or {}).get("content", ""),
        "scope": block.get("scope", ""),
        "operation": block.get("operation", ""),
        "updated_at": format_ts(last.at),
        "shared": latest.shared,
        "not_shared_reason": latest.not_shared_reason,
        "record": record,
        "history": [history_json(e) for e in entries],
    }
    if as_json:
        emit_json(facts)
        return
    rows = {k: v for k, v in facts.items() if k not in ("record", "history", "not_shared_reason")}
    rows["evidence"] = latest.evidence.label or latest.evidence.evidence_class
    rows["confidence"] = f"{last.confidence:.3f}"
    rows["shared"] = "yes" if latest.shared else f"no: {latest.not_shared_reason}"
    rows["contested_with"] = ", ".join(latest.contested_with) or "-"
    rows["verified_against"] = ", ".join(latest.verified_against) or "-"
    key_value_table(f"lesson {lesson_id}", rows)
    _history_table(lesson_id, entries)


@app.command()
def edit(
    lesson_id: _IdArgument,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The new content.")],
    reason: Annotated[str, typer.Option(help="Why, kept in the history.")] = "",
    expected_version: Annotated[
        int, typer.Option(min=0, help="Refuse if the lesson moved past this version (0: any).")
    ] = 0,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replace a lesson's text; the old version stays in its history."""
    with client_for(resolve_home(home)) as client:
        lesson = client.edit(lesson_id, text, expected_version=expected_version, reason=reason)
    if as_json:
        emit_json(lesson_json(lesson))
    else:
        _lesson_table(f"edited: lesson {lesson.id} is now version {lesson.version}", lesson)


@app.command()
def share(
    lesson_id: _IdArgument,
    access: Annotated[
        Literal["public", "trusted", "private"],
        typer.Argument(help="public: every peer; trusted: well-reputed peers; private: named."),
    ],
    recipient: Annotated[
        list[str] | None,
        typer.Option("--recipient", "-r", help="A node id a private lesson may reach (repeat)."),
    ] = None,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Say who a lesson may be shared with; the lesson keeps its id and history."""
    with client_for(resolve_home(home)) as client:
        lesson = client.set_access(lesson_id, access, recipient or ())
    if as_json:
        emit_json(lesson_json(lesson))
    else:
        _lesson_table(f"lesson {lesson.id} is now {lesson.access_level}", lesson)


@app.command()
def retire(
    lesson_id: _IdArgument,
    reason: Annotated[str, typer.Option(help="Why, kept in the history.")] = "",
    expected_version: Annotated[
        int, typer.Option(min=0, help="Refuse if the lesson moved past this version (0: any).")
    ] = 0,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Withdraw a lesson; it is never deleted and stays in the history."""
    with client_for(resolve_home(home)) as client:
        lesson = client.retire(lesson_id, reason=reason, expected_version=expected_version)
    if as_json:
        emit_json(lesson_json(lesson))
    else:
        _lesson_table(f"retired: lesson {lesson.id}", lesson)


@app.command()
def history(lesson_id: _IdArgument, home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Every event of a lesson's chain, oldest first."""
    with client_for(resolve_home(home)) as client:
        entries = client.history(lesson_id)
    if as_json:
        emit_json([history_json(e) for e in entries])
    else:
        _history_table(lesson_id, entries)


def register(root: typer.Typer) -> None:
    """Add the ``lessons`` group to the root app."""
    root.add_typer(app)
