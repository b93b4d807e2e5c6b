"""The ``Situation`` contract of adaptive recovery, on the agent's side.

A tool that knows its own failure modes *declares* a situation next to its status::

    {"status": "error",
     "situation": {"kind": "auth", "subject": "gh", "interactive": True,
                   "unblock": "run `gh auth login` in a terminal", "probe": "gh auth status"}}

``validate_situation(tool, declared)`` turns that block into a :class:`Situation` or raises
``InvalidRecord`` (reason ``bad_situation``) naming the tool: a malformed declaration is a bug
in that tool, not something to guess around. The kind vocabulary and the ``Situation`` value
are the node's own (``lamarck.learning.situations``, a pure module), so a situation the
agent sees is exactly what the node stores.

``interactive`` is a property of a *tool* (its whole job is a human hand-off: a browser sign-in,
a prompt for input), held by :class:`ToolSpec`; a declared situation may also say its remedy
is interactive.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lamarck.errors import InvalidRecord
from lamarck.learning.situations import (
    KINDS,
    PERSISTABLE_KINDS,
    Situation,
    SituationLesson,
    SituationSource,
)

__all__ = [
    "BLOCKER_KINDS",
    "KINDS",
    "PERSISTABLE_KINDS",
    "Situation",
    "SituationLesson",
    "SituationSource",
    "ToolSpec",
    "subject_of",
    "validate_situation",
]

# Kinds that need someone other than the agent (a sign-in, an install, a grant, a wait for a
# quota): they open a blocker and its workaround budget. The others (network, empty, truncated,
# degenerate) describe a transient failure or the shape of a result: the agent can retry,
# search again or read on, so they never open a budget by themselves.
BLOCKER_KINDS = PERSISTABLE_KINDS | frozenset({"quota"})

# The keys a declared situation may carry; anything else is a typo in the tool.
_DECLARED_KEYS = frozenset(
    {
        "kind",
        "subject",
        "interactive",
        "env_fingerprint",
        "unblock",
        "probe",
        "injected_instruction",
    }
)
# Argument names that say what a call is about, in the order they are tried.
_SUBJECT_ARGS = ("subject", "binary", "command", "cmd", "url", "path", "file")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the recovery policy must know about a tool: never how to work around it.

    ``interactive``: the tool's whole job is a human hand-off (refused when nobody can answer).
    ``search``: an empty result is the ``empty`` situation rather than a plain answer.
    ``subject_arg``: the argument naming what a call is about (default: the first of
    subject, binary, command, cmd, url, path, file that the call carries; else the tool name).
    """

    name: str
    interactive: bool = False
    search: bool = False
    subject_arg: str | None = None

    def __post_init__(self) -> None:
        """A tool needs a name."""
        if not self.name.strip():
            raise InvalidRecord("a tool spec needs a name", reason="bad_tool_spec")


def _subject_text(key: str, value: Any) -> str:
    """The subject an argument names: a command's program, a URL's host, else the value."""
    text = str(value).strip()
    if not text:
        return ""
    if key in ("command", "cmd"):
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        return words[0] if words else ""
    if key == "url":
        return urlsplit(text).hostname or text
    return text


def subject_of(tool: ToolSpec, args: Mapping[str, Any]) -> str:
    """What a call to ``tool`` with ``args`` is about (``gh`` for ``run_shell("gh pr list")``)."""
    keys = (tool.subject_arg,) if tool.subject_arg else _SUBJECT_ARGS
    for key in keys:
        if key in args and args[key] is not None:
            text = _subject_text(key, args[key])
            if text:
                return text
    return tool.name


def _text_field(tool: str, declared: Mapping[str, Any], key: str) -> str | None:
    value = declared.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRecord(
            f"tool {tool!r} declared a situation whose {key} is not a string",
            reason="bad_situation",
            tool=tool,
        )
    return value.strip() or None


def validate_situation(tool: str, declared: Mapping[str, Any]) -> Situation:
    """The declared situation of ``tool``'s result, or ``InvalidRecord`` naming the tool.

    Refused (reason ``bad_situation``): a block that is not a mapping, an unknown key, an
    unknown kind, a missing or empty subject, a non-boolean flag or a non-string field.
    """
    if not isinstance(declared, Mapping):
        raise InvalidRecord(
            f"tool {tool!r} declared a situation that is not a mapping",
            reason="bad_situation",
            tool=tool,
        )
    unknown = sorted(set(declared) - _DECLARED_KEYS)
    if unknown:
        raise InvalidRecord(
            f"tool {tool!r} declared a situation with unknown keys {unknown}",
            reason="bad_situation",
            tool=tool,
        )
    kind = declared.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidRecord(
            f"tool {tool!r} declared unknown situation kind {kind!r} "
            f"(known: {', '.join(sorted(KINDS))})",
            reason="bad_situation",
            tool=tool,
        )
    subject = _text_field(tool, declared, "subject")
    if subject is None:
        raise InvalidRecord(
            f"tool {tool!r} declared a {kind!r} situation without a subject",
            reason="bad_situation",
            tool=tool,
        )
    flags: dict[str, bool] = {}
    for key in ("interactive", "injected_instruction"):
        value = declared.get(key, False)
        if not isinstance(value, bool):
            raise InvalidRecord(
                f"tool {tool!r} declared a situation whose {key} is not a boolean",
                reason="bad_situation",
                tool=tool,
            )
        flags[key] = value
    return Situation.declared(
        tool=tool,
        subject=subject,
        kind=kind,
        interactive=flags["interactive"],
        env_fingerprint=_text_field(tool, declared, "env_fingerprint") or "",
        unblock=_text_field(tool, declared, "unblock"),
        probe=_text_field(tool, declared, "probe"),
        injected_instruction=flags["injected_instruction"],
    )
