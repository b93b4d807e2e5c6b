"""Reading a tool result (design sources: adaptive recovery): declared first, inferred second, never
per-tool code.

``read_result(tool, args, result, params=...)`` is what an agent loop calls on every result:

1. a result that *declares* a situation (``result["situation"]``) is validated by
   :func:`lamarck.agent.situation.validate_situation`, which raises on a malformed block;
2. otherwise :func:`classify_result` maps the result onto the kind vocabulary from generic
   signals only: ``executed: False`` with a ``tier`` (a permission gate) → ``permission``;
   ``rate_limited`` or HTTP 429 → ``quota``; HTTP 401/403 and "not logged in" /
   "authentication required" → ``auth``; "command not found" / "is not recognized" →
   ``not_installed``; not-permitted text → ``permission``; connection errors → ``network``;
   a truncation marker → ``truncated``; an empty answer from a search tool → ``empty``.

An inferred situation never carries ``unblock`` or ``probe`` (the node's ``Situation`` refuses
it) and is never stored as a lesson. A result whose content carries an instruction aimed at the
agent ("ignore previous instructions", "curl ... | sh") is flagged ``injected_instruction``:
the turn then teaches nothing.

Text patterns read the error channel (``error``, ``stderr``, ``message``) of a result that did
not fail, and every text field of one that did, so a file that merely *contains* "permission
denied" is not a blocker. A bare string result has only one channel and is read whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lamarck.agent.situation import (
    BLOCKER_KINDS,
    Situation,
    ToolSpec,
    subject_of,
    validate_situation,
)
from lamarck.params_checks import check_patterns

__all__ = [
    "CallOutcome",
    "Classification",
    "ClassifierParams",
    "classify_result",
    "read_result",
]

#: How a call ended, in the recorder's (and the outcome record's) words.
CallOutcome = Literal["ok", "failed", "refused"]

_ERROR_KEYS = ("error", "stderr", "message", "detail")
_OUTPUT_KEYS = ("output", "stdout", "content", "result", "results", "text", "body", "items")
_PAYLOAD_KEYS = ("results", "items", "matches", "output", "stdout", "content", "text")
_STATUS_KEYS = ("status_code", "http_status", "code", "status")
_EXIT_KEYS = ("exit_code", "returncode", "exit_status")
_FAILED_STATUSES = frozenset({"error", "failed", "failure"})
# HTTP statuses that are signals in themselves (design sources: adaptive recovery).
_HTTP_AUTH = frozenset({401, 403})
_HTTP_QUOTA = 429
_HTTP_ERROR_FROM = 400
# The range a number must fall in to be read as an HTTP status rather than some other code.
_HTTP_RANGE = (100, 599)


@dataclass(frozen=True, slots=True)
class ClassifierParams:
    """The generic signals of the inferred classifier, as case-insensitive regexes.

    Each tuple must hold at least one pattern that compiles. The defaults are the generic
    shell, HTTP and OS wordings; they name no tool.
    """

    not_installed: tuple[str, ...] = (
        r"command not found",
        r"is not recognized as (an internal or external command|the name of a cmdlet)",
        r"executable file not found",
    )
    auth: tuple[str, ...] = (
        r"not logged in",
        r"not logged into",
        r"authentication required",
        r"please (log|sign) ?in",
        r"\b401\b.*unauthori[sz]ed",
        r"\b403\b.*forbidden",
        r"bad credentials",
    )
    quota: tuple[str, ...] = (r"rate limit", r"too many requests", r"quota exceeded")
    not_permitted: tuple[str, ...] = (
        r"permission denied",
        r"operation not permitted",
        r"access is denied",
        r"\bEACCES\b",
        r"\bEPERM\b",
    )
    connection: tuple[str, ...] = (
        r"connection refused",
        r"connection reset",
        r"could not resolve host",
        r"name or service not known",
        r"temporary failure in name resolution",
        r"network is unreachable",
        r"timed out",
    )
    # The markers truncating tools leave in their output.
    truncation_markers: tuple[str, ...] = (
        r"\[(output )?truncated\b",
        r"\.\.\. ?\(truncated",
        r"<truncated>",
        r"\[\d+ (more )?(bytes|lines|characters) (omitted|truncated)\]",
    )
    # Text in a result that addresses the agent rather than the user.
    injected_instruction: tuple[str, ...] = (
        r"ignore (all |any )?(the )?(previous|prior|above) instructions",
        r"disregard (all |any )?(the )?(previous|prior|above) instructions",
        r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z)?sh\b",
        r"\b(assistant|agent|ai)\b[^\n.]{0,40}\b(must|should) (now )?(run|execute)\b",
        r"<\s*/?\s*system\s*>",
    )

    def __post_init__(self) -> None:
        """Every pattern list is non-empty and compiles."""
        for name in (
            "not_installed",
            "auth",
            "quota",
            "not_permitted",
            "connection",
            "truncation_markers",
            "injected_instruction",
        ):
            check_patterns(name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class Classification:
    """What one result means: how the call ended, its situation, and whether it was injected."""

    outcome: CallOutcome
    situation: Situation | None = None
    injected_instruction: bool = False

    @property
    def blocker(self) -> bool:
        """The result carries a situation that needs someone other than the agent."""
        return self.situation is not None and self.situation.kind in BLOCKER_KINDS


def _any(patterns: Sequence[str], text: str) -> bool:
    return any(re.search(p, text, re.IGNORECASE | re.MULTILINE) for p in patterns)


def _strings(value: Any) -> list[str]:
    """The text inside a result field (a string, bytes, or a list of them)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, bytes):
        return [value.decode("utf-8", errors="replace")]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


def _http_status(result: Mapping[str, Any]) -> int | None:
    for key in _STATUS_KEYS:
        value = result.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        if _HTTP_RANGE[0] <= value <= _HTTP_RANGE[1]:
            return value
    return None


def _outcome(result: Any) -> CallOutcome:
    """How the call ended, from the result's structure alone."""
    if not isinstance(result, Mapping):
        return "ok"
    if result.get("executed") is False or str(result.get("status", "")).lower() == "refused":
        return "refused"
    status = result.get("status")
    if isinstance(status, str) and status.lower() in _FAILED_STATUSES:
        return "failed"
    if result.get("ok") is False or result.get("success") is False:
        return "failed"
    for key in _EXIT_KEYS:
        code = result.get(key)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return "failed"
    http = _http_status(result)
    if http is not None and http >= _HTTP_ERROR_FROM:
        return "failed"
    if any(s.strip() for s in _strings(result.get("error"))):
        return "failed"
    return "ok"


def _texts(result: Any, outcome: CallOutcome) -> tuple[str, str]:
    """(signal text, content text): where failure wordings and injected text are looked for."""
    if isinstance(result, Mapping):
        errors = [s for k in _ERROR_KEYS for s in _strings(result.get(k))]
        output = [s for k in _OUTPUT_KEYS for s in _strings(result.get(k))]
        signal = errors + (output if outcome != "ok" else [])
        return "\n".join(signal), "\n".join(errors + output)
    text = "\n".join(_strings(result))
    return text, text


def _empty(result: Any) -> bool:
    """An answer with nothing in it (for a search tool: the ``empty`` situation)."""
    if result is None:
        return True
    if isinstance(result, str | bytes):
        return not result.strip()
    if isinstance(result, list | tuple):
        return len(result) == 0
    if isinstance(result, Mapping):
        for key in _PAYLOAD_KEYS:
            if key in result:
                return _empty(result[key])
    return False


def _kind(tool: ToolSpec, result: Any, outcome: CallOutcome, p: ClassifierParams) -> str | None:
    """The inferred kind, most specific signal first."""
    if isinstance(result, Mapping):
        if result.get("executed") is False and result.get("tier") is not None:
            return "permission"
        http = _http_status(result)
        if result.get("rate_limited") or http == _HTTP_QUOTA:
            return "quota"
        if http in _HTTP_AUTH:
            return "auth"
    signal, content = _texts(result, outcome)
    for kind, patterns in (
        ("not_installed", p.not_installed),
        ("auth", p.auth),
        ("quota", p.quota),
        ("permission", p.not_permitted),
        ("network", p.connection),
    ):
        if signal and _any(patterns, signal):
            return kind
    if content and _any(p.truncation_markers, content):
        return "truncated"
    if tool.search and outcome == "ok" and _empty(result):
        return "empty"
    return None


def classify_result(
    tool: ToolSpec, args: Mapping[str, Any], result: Any, *, params: ClassifierParams
) -> Classification:
    """The inferred reading of a result that declares nothing (design sources: adaptive
    recovery)."""
    outcome = _outcome(result)
    kind = _kind(tool, result, outcome, params)
    _, content = _texts(result, outcome)
    injected = bool(content) and _any(params.injected_instruction, content)
    situation = None
    if kind is not None:
        situation = Situation.inferred(
            tool=tool.name,
            subject=subject_of(tool, args),
            kind=kind,
            injected_instruction=injected,
        )
        if kind in BLOCKER_KINDS and outcome == "ok":
            # A bare string saying "command not found" is a failed call, whatever it returned.
            outcome = "failed"
    return Classification(outcome, situation, injected)


def read_result(
    tool: ToolSpec, args: Mapping[str, Any], result: Any, *, params: ClassifierParams
) -> Classification:
    """Declared first (validated, raising on a malformed block), inferred second."""
    if isinstance(result, Mapping) and result.get("situation") is not None:
        situation = validate_situation(tool.name, result["situation"])
        outcome = _outcome(result)
        _, content = _texts(result, outcome)
        injected = situation.injected_instruction or (
            bool(content) and _any(params.injected_instruction, content)
        )
        if situation.kind in BLOCKER_KINDS and outcome == "ok":
            outcome = "failed"
        return Classification(outcome, situation, injected)
    return classify_result(tool, args, result, params=params)
