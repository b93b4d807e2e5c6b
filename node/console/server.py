"""The operator's console served over HTTP by the node.

:class:`ConsoleApp` answers requests from the node's own services: overview and health from
``OperatorService.GetStatus`` / ``GetHealth``, the quarantine queue from ``ListQuarantine``
and decisions through ``DecideQuarantine`` (so a decision is re-verified, stored, logged with
actor, time and note, and charged to reputation exactly as ``lamarck quarantine`` does),
lessons and their history from the store, reputation from a ``ReputationSource``.
:func:`start_console` serves it on ``asyncio`` streams (``lamarck.node.console.http``).

Who may use it: the operator, everywhere, loopback included (any local process may be an
agent; only who can read the node's home is its operator).

* Every page but ``/login`` and ``/static/`` needs a session: the ``lamarck_console`` cookie
  (HttpOnly, SameSite=Strict, Path=/) holds a random session id, never the operator token;
  sessions live in the console's memory for ``ConsoleParams.session_ttl_s`` and end with
  ``POST /logout`` or the node. A script may instead send ``Authorization: Bearer <operator
  token>`` (a browser never adds that header to a cross-site request).
* A session is opened by the one-time login URL the node prints at start and writes to its
  ``node.json`` (``console_login_url``: ``/login?code=...``, good once), or by posting the
  operator token (``<home>/operator.token``) to the ``/login`` form.
* The ``Host`` header must be exactly one of the configured host names (the loopback names,
  the listen host, ``console_hosts``): a page whose DNS name is rebound to this address
  (``127.0.0.1.nip.io`` included) is refused before anything else.

Every POST must carry the page's anti-forgery token (``csrf_token``, a per-process secret
only pages of this console contain) and, when the browser sends them, an ``Origin`` equal to
this console's and a ``Sec-Fetch-Site`` that is not ``cross-site``; anything else is 403 and
changes nothing. Pages load only ``/static/`` assets shipped in the wheel.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lamarck.domain.lru import Lru
from lamarck.domain.rows import (
    LessonFilter,
    LessonRow,
    QuarantineRow,
)
from lamarck.errors import (
    ConfigError,
    ConflictError,
    InvalidRecord,
    LamarckError,
    NotFound,
    PolicyRejected,
    StoreUnavailable,
    Unauthenticated,
    VerificationError,
)
from lamarck.health.figures import Finding, Severity
from lamarck.health.render import report_from_json
from lamarck.learning.influence import LessonEvidence
from lamarck.net import LOOPBACK_NAMES
from lamarck.node.api.node_status import ReputationSource, status_rows
from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.api.quorum_view import parse_quorum
from lamarck.node.api.ready import Provider
from lamarck.node.console import lesson_pages, pages
from lamarck.node.console.activity_loader import load_activity
from lamarck.node.console.assets import CONTENT_TYPES, asset
from lamarck.node.console.http import (
    ConsoleParams,
    Request,
    Response,
    encode_response,
    read_request,
)
from lamarck.node.console.markup import Markup, el, void
from lamarck.node.console.plots import PlotParams
from lamarck.node.console.series import score_series
from lamarck.node.store.port import LessonStore
from lamarck.proto.clock import Clock, SystemClock
from lamarck.proto.labels import with_label
from lamarck.proto.timefmt import parse_ts
from lamarck.proto.v1 import operator_pb2
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.table import ReputationRow

__all__ = [
    "COOKIE",
    "ConsoleApp",
    "ConsoleServer",
    "console_hosts",
    "http_status_for",
    "new_csrf_token",
    "new_secret",
    "start_console",
]

_log = logging.getLogger(__name__)

#: Reads lessons' evidence by id (``LessonService.evidence``).
EvidenceOf = Callable[[Sequence[LessonRow]], Awaitable[Mapping[str, LessonEvidence]]]

#: The cookie carrying a console session's random id (never the operator token).
COOKIE = "lamarck_console"
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_DECISIONS = {
    "approve": operator_pb2.QUARANTINE_DECISION_APPROVE,
    "reject": operator_pb2.QUARANTINE_DECISION_REJECT,
}
_STATES = {
    operator_pb2.QUARANTINE_STATE_PENDING: "pending",
    operator_pb2.QUARANTINE_STATE_APPROVED: "approved",
    operator_pb2.QUARANTINE_STATE_REJECTED: "rejected",
}
# Reasons of refusals that are about the request's origin, not its credentials: 403.
_FORBIDDEN_REASONS = frozenset({"csrf_token", "cross_site", "bad_host"})
_INVALID_STATUS = {"too_large": 413, "header_too_large": 431, "request_timeout": 408}


def http_status_for(error: LamarckError) -> int:
    """The HTTP status answering a typed error."""
    if isinstance(error, Unauthenticated):
        return 403 if error.reason in _FORBIDDEN_REASONS else 401
    if isinstance(error, InvalidRecord):
        return _INVALID_STATUS.get(error.reason, 400)
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, ConflictError):
        return 409
    if isinstance(error, VerificationError | PolicyRejected):
        return 422
    if isinstance(error, StoreUnavailable):
        return 503
    return 500


def _host_name(host_header: str) -> str:
    """The host part of a ``Host`` header, lower-cased (``[::1]:8080`` -> ``::1``)."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def console_hosts(listen_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The exact host names a console on ``listen_host`` answers: the loopback names, the
    listen host itself (unless a wildcard) and the configured ``extra`` names."""
    names = {*LOOPBACK_NAMES, *(_host_name(h) for h in extra)}
    host = listen_host.strip("[]").lower()
    if host not in _WILDCARDS:
        names.add(host)
    return frozenset(names)


class ConsoleApp:
    """Routes console requests to the operator service, the store and the reputation book.

    ``token`` is the operator token (a login form takes it; a script may send it as a
    bearer); ``hosts`` the exact ``Host`` names answered (``console_hosts``); ``login_code``
    the secret of the one-time login URL (``None``: none); ``csrf_token`` the anti-forgery
    secret every page embeds (a fresh one per process). ``clock`` (monotonic seconds) and
    ``new_session`` (a random session id) are injected for tests.
    """

    def __init__(
        self,
        operator: OperatorServicer,
        store: Provider[LessonStore],
        *,
        reputation: Callable[[], ReputationSource | None],
        params: ConsoleParams,
        plot: PlotParams,
        reputation_params: ReputationParams,
        csrf_token: str,
        token: str,
        hosts: Iterable[str] = LOOPBACK_NAMES,
        login_code: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        new_session: Callable[[], str] | None = None,
        evidence: EvidenceOf | None = None,
        wall_clock: Clock | None = None,
    ) -> None:
        """``evidence`` reads the lessons' evidence classes (the lesson service's; None: the
        pages show none). ``reputation_params`` are the book's (its scores over time are
        replayed with them); ``wall_clock`` says what time the charts end at."""
        if not csrf_token:
            raise ConfigError("the console needs an anti-forgery token", reason="no_csrf_token")
        if not token:
            raise ConfigError("the console needs the operator token", reason="no_operator_token")
        self._op = operator
        self._store = store
        self._reputation = reputation
        self._p = params
        self._plot = plot
        self._csrf = csrf_token
        self._token = token
        self._hosts = frozenset(_host_name(h) for h in hosts)
        self._login_code = login_code or None
        self._clock = clock
        self._new_session = new_session or new_secret
        # Session id -> when it expires (monotonic seconds); the oldest go first when full.
        self._sessions: Lru[str, float] = Lru(params.max_sessions)
        self._evidence = evidence
        self._rep_params = reputation_params
        self._wall = wall_clock or SystemClock()

    # -- entry point -------------------------------------------------------------------------
    async def handle(self, request: Request) -> Response:
        """Answer one request; typed errors become their HTTP status with a short page."""
        try:
            return await self._dispatch(request)
        except LamarckError as e:
            status = http_status_for(e)
            if status == 401 and request.method == "GET" and request.path != "/login":
                return _redirect("/login")
            return self._error(status, e)

    async def _dispatch(self, request: Request) -> Response:
        self._check_host(request)
        path = request.path
        if path.startswith("/static/") and request.method == "GET":
            name = path.removeprefix("/static/")
            return Response(200, asset(name), CONTENT_TYPES[name])
        if path == "/login":
            return await self._login(request)
        # A POST from another site is refused as such (403) before its credentials are asked.
        form = self._check_forgery(request) if request.method == "POST" else {}
        self._check_session(request)
        if request.method == "POST":
            if path == "/logout":
                return self._logout(request)
            return await self._post(request, form)
        if request.method != "GET":
            raise InvalidRecord(f"method {request.method} not allowed", reason="bad_method")
        return await self._get(path)

    # -- who may ask -------------------------------------------------------------------------
    def _check_host(self, request: Request) -> None:
        """The Host header must name one of the configured hosts exactly (DNS rebinding)."""
        host = _host_name(request.headers.get("host", ""))
        if host not in self._hosts:
            raise Unauthenticated(
                f"the console does not answer the host name {host[:100]!r}", reason="bad_host"
            )

    def _check_session(self, request: Request) -> None:
        """A live session cookie, or the operator token as a bearer, is required."""
        given = request.headers.get("authorization", "")
        if given[:7].lower() == "bearer ":
            if hmac.compare_digest(given[7:].strip().encode(), self._token.encode()):
                return
            raise Unauthenticated("wrong operator token", reason="bad_token")
        session = request.cookie(COOKIE)
        expires = self._sessions.get(session) if session else None
        if expires is None:
            raise Unauthenticated("sign in as the operator first", reason="unauthenticated")
        if self._clock() >= expires:
            self._sessions.pop(session or "")
            raise Unauthenticated("the console session expired", reason="unauthenticated")

    def _check_forgery(self, request: Request) -> dict[str, str]:
        """Refuse a POST from another site: Origin, Sec-Fetch-Site, then the page's token."""
        host = request.headers.get("host", "")
        origin = request.headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            raise Unauthenticated(f"cross-site request from {origin[:100]}", reason="cross_site")
        if request.headers.get("sec-fetch-site", "") == "cross-site":
            raise Unauthenticated("cross-site request", reason="cross_site")
        form = request.form()
        sent = form.get(pages.CSRF_FIELD, "")
        if not sent or not hmac.compare_digest(sent.encode(), self._csrf.encode()):
            raise Unauthenticated("missing or wrong anti-forgery token", reason="csrf_token")
        return form

    def _open_session(self) -> Response:
        """A new session: its random id in the cookie, then the overview."""
        session = self._new_session()
        ttl = self._p.session_ttl_s
        self._sessions.put(session, self._clock() + ttl)
        cookie = f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={int(ttl)}"
        return _redirect("/", (("Set-Cookie", cookie),))

    def _logout(self, request: Request) -> Response:
        """End this browser's session (the cookie is cleared too)."""
        session = request.cookie(COOKIE)
        if session:
            self._sessions.pop(session)
        cleared = f"{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"
        return _redirect("/login", (("Set-Cookie", cleared),))

    async def _login(self, request: Request) -> Response:
        """``/login``: the one-time code of the login URL, or a form taking the operator
        token; either opens a session."""
        if request.method == "POST":
            form = self._check_forgery(request)
            token = form.get("token", "")
            if not hmac.compare_digest(token.encode(), self._token.encode()):
                raise Unauthenticated("wrong operator token", reason="bad_token")
            return self._open_session()
        code = request.query.get("code", "")
        if code:
            expected = self._login_code
            if expected is None or not hmac.compare_digest(code.encode(), expected.encode()):
                raise Unauthenticated(
                    "this login URL was used already or is wrong", reason="bad_login_code"
                )
            self._login_code = None  # good once
            return self._open_session()
        body = el(
            "form",
            void("input", type="hidden", name=pages.CSRF_FIELD, value=self._csrf),
            el("label", "Operator token ", void("input", type="password", name="token")),
            el("button", "Sign in", type="submit"),
            method="post",
            action="/login",
        )
        return self._html("Sign in", "", body)

    # -- pages -------------------------------------------------------------------------------
    async def _get(self, path: str) -> Response:
        parts = [p for p in path.split("/") if p]
        if not parts:
            return await self._overview()
        head, rest = parts[0], parts[1:]
        if head == "reputation" and len(rest) <= 1:
            return await (self._peer(rest[0]) if rest else self._reputation_table())
        if head == "quarantine" and not rest:
            return await self._quarantine()
        if head == "lessons" and len(rest) <= 1:
            return await (self._lesson(rest[0]) if rest else self._lessons())
        if head == "health" and not rest:
            return await self._health()
        raise NotFound(f"no console page at {path[:100]}", reason="no_such_page")

    async def _status(self) -> dict[str, Any]:
        reply = await self._op.GetStatus(operator_pb2.GetStatusRequest(), None)
        data: dict[str, Any] = json.loads(reply.status_json)
        return data

    async def _overview(self) -> Response:
        status = await self._status()
        label = status.get("node_label", "")
        facts = [
            ("node", with_label(status["node_id"], label) if status["node_id"] else "-"),
            ("peer service", "serving" if status["peer_serving"] else "NOT serving"),
            *status_rows(status).items(),
        ]
        warnings = [
            Finding(w["code"], Severity(w["severity"]), w["message"]) for w in status["warnings"]
        ]
        return self._html("Overview", "overview", pages.overview_page(facts, warnings))

    def _book(self) -> ReputationSource:
        book = self._reputation()
        if book is None:
            raise StoreUnavailable("the reputation book is not loaded yet", reason="starting")
        return book

    async def _trend(self, book: ReputationSource, row: ReputationRow) -> list[Any]:
        """``row``'s peer's score over time, replayed from its history."""
        events = await book.history(row.peer)
        return score_series(
            row.peer, events, self._rep_params, now=self._wall.now(), current=row.score
        )

    async def _reputation_table(self) -> Response:
        book = self._book()
        rows = await book.rows()
        rows.sort(key=lambda r: (-r.score, r.peer))
        # The lowest scores first: the peers an operator is looking for.
        watched = sorted(rows, key=lambda r: (r.score, r.peer))[: self._p.trend_peers]
        trends = {r.peer: await self._trend(book, r) for r in watched}
        body = pages.reputation_page(rows, self._op.labels(), trends=trends, p=self._plot)
        return self._html("Reputation", "reputation", body)

    async def _peer(self, node_id: str) -> Response:
        book = self._book()
        found = [r for r in await book.rows() if r.peer == node_id]
        if not found:
            raise NotFound(f"no peer {node_id[:100]} in the reputation book", id=node_id)
        labels = self._op.labels()
        trend = await self._trend(book, found[0])
        body = pages.peer_page(
            found[0], await book.history(node_id), labels, p=self._plot, trend=trend
        )
        title = f"Peer {with_label(node_id, labels.get(node_id, ''))}"
        return self._html(title, "reputation", body)

    async def _quarantine(self) -> Response:
        rows: list[QuarantineRow] = []
        details: dict[str, lesson_pages.HeldDetails] = {}
        # The import decision kept with each row (the confidence an approval would store).
        kept = {r.id: r for r in await self._store().list_quarantine(None)}
        token = ""
        while True:
            request = operator_pb2.ListQuarantineRequest(page_token=token)
            reply = await self._op.ListQuarantine(request, None)
            for e in reply.entries:
                stored = kept.get(e.id)
                rows.append(
                    QuarantineRow(
                        id=e.id,
                        content_hash=e.content_hash,
                        source_node_id=e.source_node_id,
                        reasons=tuple(e.reasons),
                        received_at=parse_ts(e.received_at),
                        signed_record=b"",
                        state=_STATES.get(e.state, "pending"),
                        confidence=stored.confidence if stored else None,
                        transfer_rule=stored.transfer_rule if stored else None,
                    )
                )
                note = f": {e.note}" if e.note else ""
                details[e.id] = lesson_pages.HeldDetails(
                    preview=e.content_preview,
                    decision=f"by {e.decided_by} at {e.decided_at}{note}" if e.decided_at else "",
                    quorum=parse_quorum(self._op.quorum_json(e.content_hash)),
                )
            token = reply.next_page_token
            if not token:
                break
        body = lesson_pages.quarantine_page(
            rows,
            csrf_token=self._csrf,
            details=details,
            labels=self._op.labels(),
            now=self._wall.now(),
            p=self._plot,
        )
        return self._html("Quarantine", "quarantine", body)

    async def _lessons(self) -> Response:
        flt = LessonFilter(statuses=None, limit=self._p.lessons_shown)
        rows = await self._store().list_lessons(flt)
        evidence = await self._evidence(rows) if self._evidence is not None else {}
        body = lesson_pages.lessons_page(rows, evidence, self._op.labels(), p=self._plot)
        return self._html("Lessons", "lessons", body)

    async def _lesson(self, lesson_id: str) -> Response:
        store = self._store()
        row = await store.get_lesson(lesson_id)
        events = await store.lesson_events([lesson_id])
        evidence = await self._evidence([row]) if self._evidence is not None else {}
        body = lesson_pages.lesson_page(row, events, evidence.get(row.id), self._op.labels())
        return self._html("Lesson", "lessons", body)

    async def _health(self) -> Response:
        reply = await self._op.GetHealth(operator_pb2.GetHealthRequest(), None)
        report = report_from_json(json.loads(reply.report_json))
        # Binned up to the report's own time: the page shows one moment.
        activity = await load_activity(self._store(), self._p, report.generated_at)
        body = pages.health_page(report, p=self._plot, activity=activity)
        return self._html("Health", "health", body)

    # -- actions -----------------------------------------------------------------------------
    async def _post(self, request: Request, form: dict[str, str]) -> Response:
        parts = [p for p in request.path.split("/") if p]
        if len(parts) != 3 or parts[0] != "quarantine" or parts[2] not in _DECISIONS:
            raise NotFound(f"nothing to post to at {request.path[:100]}", reason="no_such_page")
        note = form.get("note", "").strip()
        if len(note) > self._p.note_max_chars:
            raise InvalidRecord(
                f"a note is at most {self._p.note_max_chars} characters", reason="note_too_long"
            )
        decide = operator_pb2.DecideQuarantineRequest(
            id=parts[1], decision=_DECISIONS[parts[2]], note=note
        )
        # Through the operator service: re-verification, storage, the logged decision and the
        # reputation charge are the same as `lamarck quarantine approve|reject`.
        await self._op.DecideQuarantine(decide, None)
        return _redirect(f"/quarantine#q-{parts[1]}")

    # -- rendering ---------------------------------------------------------------------------
    def _html(self, title: str, active: str, body: Markup, status: int = 200) -> Response:
        document = pages.page(title, active, body, csrf_token=self._csrf)
        return Response(status, document.encode("utf-8"))

    def _error(self, status: int, error: LamarckError) -> Response:
        body = el("p", str(error), class_="finding critical", data_reason=error.reason)
        return self._html(f"{status} {error.reason}", "", body, status)


def _redirect(location: str, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    """A 303 See Other to ``location``."""
    return Response(303, b"", "text/plain; charset=utf-8", (("Location", location), *headers))


@dataclass
class ConsoleServer:
    """A started console: where it listens, and how to stop it."""

    host: str
    port: int
    _server: asyncio.Server

    @property
    def url(self) -> str:
        """``http://host:port/`` (a wildcard listen host is dialled on loopback)."""
        name = "127.0.0.1" if self.host in _WILDCARDS else self.host
        host = f"[{name}]" if ":" in name else name
        return f"http://{host}:{self.port}/"

    def login_url(self, code: str) -> str:
        """The one-time login URL carrying ``code``."""
        return f"{self.url}login?code={code}"

    async def stop(self) -> None:
        """Stop accepting, and wait for the listener to close."""
        self._server.close()
        await self._server.wait_closed()


Handler = Callable[[Request], Awaitable[Response]]


async def _serve_one(
    handler: Handler,
    params: ConsoleParams,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """Read one request, answer it, close the connection."""
    try:
        try:
            request = await read_request(reader, params)
        except InvalidRecord as e:
            response = Response(http_status_for(e), str(e).encode(), "text/plain; charset=utf-8")
        else:
            response = await handler(request)
        writer.write(encode_response(response))
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # the client went away: nothing to answer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def start_console(
    app: ConsoleApp | Handler,
    listen: str,
    *,
    params: ConsoleParams,
) -> ConsoleServer:
    """Serve ``app`` on ``listen`` (``host:port``; port 0 picks one)."""
    host, sep, port = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise ConfigError(
            f"console_listen must be host:port, got {listen!r}",
            reason="invalid_config",
            field="console_listen",
        )
    handler: Handler = app.handle if isinstance(app, ConsoleApp) else app

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _serve_one(handler, params, reader, writer)

    try:
        server = await asyncio.start_server(
            connected, host, int(port), limit=params.max_request_line
        )
    except OSError as e:
        raise ConfigError(
            f"cannot serve the console on {listen}: {e}",
            reason="bind_failed",
            field="console_listen",
        ) from e
    bound = server.sockets[0].getsockname()
    console = ConsoleServer(host=host, port=int(bound[1]), _server=server)
    _log.info("console serving", extra={"url": console.url})
    return console


def new_secret() -> str:
    """256 random bits, URL-safe: a session id or a one-time login code."""
    return secrets.token_urlsafe(32)


def new_csrf_token() -> str:
    """A fresh anti-forgery secret (one per console process)."""
    return new_secret()
