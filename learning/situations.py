"""Situation lessons (design sources: adaptive recovery): remembered blockers, and the probe-first
decision.

A situation lesson says "the last time tool X on subject S here needed the user, and here is
exactly what they had to do". Its signature is tool + subject + kind + env fingerprint (for a
CLI: the resolved binary path and its ``--version``, hashed: paths are user data).

Poisoning is closed by construction:

1. only *declared* situations (returned by tool code) are persisted; inferred ones never are;
2. ``unblock`` and ``probe`` exist only on declared situations, so free text from a tool's output
   (a fetched page, an issue body) can never reach them;
3. a result marked ``injected_instruction`` is excluded from all learning;
4. network and other transient kinds are never persisted: they are not facts about the machine;
5. a lesson only makes the agent ask sooner: the decision is ``Probe``, ``Escalate``, ``Note`` or
   ``Proceed`` — never "skip" and never a grant. Before anything blocks, a probe re-verifies it;
6. a lesson that leaves the node cites its evidence: the recorded outcome of the turn that met
   the blocker, in which a call to the situation's tool failed or was refused
   (``shows_blocker``). The publisher shares no situation without one, and a peer takes it only
   about a tool that peer declares, with exactly that tool's declared remedies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lamarck.errors import InvalidRecord

__all__ = [
    "KINDS",
    "PERSISTABLE_KINDS",
    "Escalate",
    "Note",
    "Probe",
    "Proceed",
    "Situation",
    "SituationCall",
    "SituationLesson",
    "SituationSource",
    "decide_before_dispatch",
    "env_fingerprint",
    "shows_blocker",
    "situation_signature",
    "validate_for_learning",
]

#: Results of an outcome's approach step that show a blocker (the call did not succeed).
_BLOCKED_RESULTS = frozenset({"failed", "refused"})

# The kind vocabulary (design sources: adaptive recovery). Persistable kinds are
# facts about this machine.
PERSISTABLE_KINDS = frozenset(
    {"auth", "insufficient_scopes", "not_installed", "permission", "locked"}
)
# Transient or result-shape kinds: classified, never remembered.
_TRANSIENT_KINDS = frozenset({"network", "quota", "empty", "truncated", "degenerate"})
KINDS = PERSISTABLE_KINDS | _TRANSIENT_KINDS


class SituationSource(StrEnum):
    """Who classified a result: the tool's own code, or a generic classifier."""

    DECLARED = "declared"
    INFERRED = "inferred"


@dataclass(frozen=True, slots=True)
class Situation:
    """A classified tool result. Build with ``declared`` or ``inferred``, which validate it."""

    tool: str
    subject: str
    kind: str
    source: SituationSource
    interactive: bool = False
    env_fingerprint: str = ""
    unblock: str | None = None
    probe: str | None = None
    injected_instruction: bool = False

    def __post_init__(self) -> None:
        """A malformed situation is a bug in the tool that made it: refuse it loudly."""
        if not self.tool.strip() or not self.subject.strip():
            raise InvalidRecord("a situation needs a tool and a subject", reason="bad_situation")
        if self.kind not in KINDS:
            raise InvalidRecord(
                f"unknown situation kind {self.kind!r} from tool {self.tool!r}",
                reason="bad_situation",
            )
        if self.source is SituationSource.INFERRED and (self.unblock or self.probe):
            # (2) an inferred situation comes from free text; it may carry no command.
            raise InvalidRecord(
                "an inferred situation never carries unblock or probe", reason="bad_situation"
            )

    @classmethod
    def declared(
        cls,
        *,
        tool: str,
        subject: str,
        kind: str,
        interactive: bool = False,
        env_fingerprint: str = "",
        unblock: str | None = None,
        probe: str | None = None,
        injected_instruction: bool = False,
    ) -> Situation:
        """A situation returned by tool code, the only kind that may carry unblock and probe."""
        return cls(
            tool=tool,
            subject=subject,
            kind=kind,
            source=SituationSource.DECLARED,
            interactive=interactive,
            env_fingerprint=env_fingerprint,
            unblock=unblock,
            probe=probe,
            injected_instruction=injected_instruction,
        )

    @classmethod
    def inferred(
        cls, *, tool: str, subject: str, kind: str, injected_instruction: bool = False
    ) -> Situation:
        """A situation a generic classifier read from output: no unblock, no probe."""
        return cls(
            tool=tool,
            subject=subject,
            kind=kind,
            source=SituationSource.INFERRED,
            injected_instruction=injected_instruction,
        )


def env_fingerprint(binary_path: str | None, version: str | None) -> str:
    """What a CLI situation depends on, hashed: the resolved binary and its version."""
    if not binary_path and not version:
        return ""
    raw = json.dumps([binary_path or "", (version or "").strip()])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def situation_signature(s: Situation) -> str:
    """The identity of a situation lesson: tool + subject + kind + env fingerprint."""
    raw = json.dumps([s.tool, s.subject, s.kind, s.env_fingerprint])
    return "situation:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def validate_for_learning(s: Situation) -> Situation:
    """Return ``s`` if it may become a lesson; otherwise raise ``InvalidRecord`` saying why."""
    if s.injected_instruction:
        raise InvalidRecord("an injected instruction teaches nothing", reason="injected")  # (3)
    if s.source is not SituationSource.DECLARED:
        raise InvalidRecord("inferred situations are never persisted", reason="inferred")  # (1)
    if s.kind not in PERSISTABLE_KINDS:
        raise InvalidRecord(f"kind {s.kind!r} is never persisted", reason="transient")  # (4)
    return s


def shows_blocker(s: Situation, approach: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an outcome's ``approach`` (its steps: ``operation_key``, ``outcome``) is the turn
    that met ``s``: a call to the situation's tool failed or was refused (rule 6).

    The operation key of a tool call is the tool's name, as the decision-time check reads it
    (``mechanical.is_about``). A turn where the tool only succeeded backs no blocker.
    """
    return any(
        str(step.get("operation_key", "")).strip() == s.tool
        and step.get("outcome") in _BLOCKED_RESULTS
        for step in approach
    )


@dataclass(frozen=True, slots=True)
class SituationLesson:
    """A stored situation lesson as the decision needs it."""

    lesson_id: str
    situation: Situation

    @property
    def content(self) -> str:
        """One line built only from declared fields."""
        s = self.situation
        text = f"`{s.tool}` on {s.subject} needed the user ({s.kind})"
        return f"{text}; what they did: {s.unblock}" if s.unblock else text


@dataclass(frozen=True, slots=True)
class SituationCall:
    """A call about to be dispatched: its tool, subject and env fingerprint."""

    tool: str
    subject: str
    env_fingerprint: str = ""


@dataclass(frozen=True, slots=True)
class Probe:
    """Run this probe (declared by tool code) before dispatch; report whether still blocked."""

    lesson_id: str
    probe: str


@dataclass(frozen=True, slots=True)
class Escalate:
    """The probe says still blocked: ask the user now, citing the lesson."""

    lesson_id: str
    message: str


@dataclass(frozen=True, slots=True)
class Note:
    """No probe: prepend this one-line note to the tool result; the model decides."""

    lesson_id: str
    note: str
    invalidate: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Proceed:
    """Dispatch normally; ``invalidate`` lists lessons a clear probe proved stale."""

    invalidate: tuple[str, ...] = ()


def _matches(call: SituationCall, lesson: SituationLesson) -> bool:
    """Same subject; the same environment when both are fingerprinted."""
    s = lesson.situation
    if s.subject != call.subject:
        return False
    return not (s.env_fingerprint and call.env_fingerprint) or (
        s.env_fingerprint == call.env_fingerprint
    )


def decide_before_dispatch(
    call: SituationCall,
    lessons: Sequence[SituationLesson],
    *,
    probe_blocked: dict[str, bool] | None = None,
) -> Probe | Escalate | Note | Proceed:
    """Probe-first retrieval (design sources: adaptive recovery) for one call.

    First call without ``probe_blocked``: a matching lesson with a probe → ``Probe``. Call again
    with ``probe_blocked={lesson_id: still_blocked}``: still blocked → ``Escalate`` citing the
    lesson; clear → ``Proceed`` invalidating it. A matching lesson without a probe → ``Note``.
    No match → ``Proceed``. Nothing here skips a call or grants anything.
    """
    results = probe_blocked or {}
    matching = [lesson for lesson in lessons if _matches(call, lesson)]
    invalidate: list[str] = []
    for lesson in matching:
        probe = lesson.situation.probe
        if not probe:
            continue
        if lesson.lesson_id not in results:
            return Probe(lesson.lesson_id, probe)
        if results[lesson.lesson_id]:
            return Escalate(
                lesson.lesson_id,
                f"Still blocked: {lesson.content} (lesson {lesson.lesson_id}, re-checked by "
                f"`{probe}`). Ask the user before trying again.",
            )
        invalidate.append(lesson.lesson_id)
    unprobed = [lesson for lesson in matching if not lesson.situation.probe]
    if unprobed:
        first = unprobed[0]
        return Note(
            first.lesson_id,
            f"Note: last time {first.content} (lesson {first.lesson_id}).",
            tuple(invalidate),
        )
    return Proceed(tuple(invalidate))
