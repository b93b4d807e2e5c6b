"""Lesson scopes (design sources: adaptive memory): ``project:<digest>`` and ``global``; promotion,
demotion.

The project digest is the SHA-256 of the git ``remote.origin.url`` (so every worktree and clone
of one repository is one project), falling back to the checkout's realpath. Only the digest is
stored: paths and URLs are user data. Credentials embedded in a URL are dropped before hashing,
so the same repository reached with or without a token is the same project.

Promotion: a project lesson confirmed from ``promotion_projects`` (2) distinct projects becomes
global; a run that proves the same lesson again in another project confirms it there (the node
never learns it twice). Demotion: a global lesson contradicted from a project that never
confirmed it (a third project) goes back to the project that last confirmed it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lamarck.errors import InvalidRecord
from lamarck.learning.params import LessonParams

__all__ = [
    "GLOBAL",
    "PROJECT_PREFIX",
    "ScopeChange",
    "after_confirmation",
    "after_contradiction",
    "is_project_scope",
    "over_cap",
    "project_digest",
    "project_of",
    "project_scope",
    "recall_scopes",
    "validate_scope",
]

GLOBAL = "global"
PROJECT_PREFIX = "project:"
_HEX_DIGEST = re.compile(r"^[0-9a-f]{16,64}$")
# scheme://user[:pass]@host → scheme://host ; user@host:path (scp-like) is left alone: no secret.
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@")


def _normalise_remote(url: str) -> str:
    """One spelling per repository: no credentials, no trailing slash or ``.git``."""
    text = _USERINFO.sub(r"\1", url.strip())
    text = text.rstrip("/")
    if text.endswith(".git"):
        text = text[: -len(".git")]
    return text


def project_digest(remote_url: str | None, realpath: str | None) -> str:
    """SHA-256 hex of the normalised remote URL, else of the realpath; refuses neither."""
    if remote_url and remote_url.strip():
        source = "remote:" + _normalise_remote(remote_url)
    elif realpath and realpath.strip():
        source = "path:" + realpath.strip()
    else:
        raise InvalidRecord("a project needs a remote URL or a path", reason="no_project")
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def project_scope(digest: str) -> str:
    """The scope string of a project digest."""
    if not _HEX_DIGEST.match(digest):
        raise InvalidRecord("a project digest is 16 to 64 lowercase hex digits", reason="bad_scope")
    return PROJECT_PREFIX + digest


def is_project_scope(scope: str) -> bool:
    """Whether ``scope`` names one project."""
    return scope.startswith(PROJECT_PREFIX)


def project_of(scope: str) -> str | None:
    """The digest of a project scope; ``None`` for global."""
    return scope[len(PROJECT_PREFIX) :] if is_project_scope(scope) else None


def validate_scope(scope: str) -> str:
    """Return ``scope`` if it is ``global`` or a well-formed project scope; else refuse it."""
    if scope == GLOBAL:
        return scope
    digest = project_of(scope)
    if digest is None or not _HEX_DIGEST.match(digest):
        raise InvalidRecord(f"unknown scope {scope!r}", reason="bad_scope")
    return scope


def recall_scopes(scope: str) -> tuple[str, ...]:
    """What a recall in ``scope`` may see: that project's lessons plus global ones."""
    validate_scope(scope)
    return (GLOBAL,) if scope == GLOBAL else (scope, GLOBAL)


@dataclass(frozen=True, slots=True)
class ScopeChange:
    """A lesson's scope and confirming projects after an outcome; ``changed`` if scope moved."""

    scope: str
    confirmed_projects: tuple[str, ...]
    changed: bool


def after_confirmation(
    scope: str, confirmed_projects: Sequence[str], project: str, p: LessonParams
) -> ScopeChange:
    """Record a confirmation from ``project``; promote once enough distinct projects confirmed.

    ``confirmed_projects`` keeps each project once, the most recent confirmer last.
    """
    projects = (*(x for x in confirmed_projects if x != project), project)
    if is_project_scope(scope) and len(projects) >= p.promotion_projects:
        return ScopeChange(GLOBAL, projects, changed=True)
    return ScopeChange(scope, projects, changed=False)


def after_contradiction(scope: str, confirmed_projects: Sequence[str], project: str) -> ScopeChange:
    """Demote a global lesson contradicted from a project that never confirmed it.

    It returns to the project that last confirmed it, whose confirmation is all that is left
    standing; promotion must then be earned again from a second project. A global lesson no
    project confirmed (e.g. imported) has nowhere to go and stays global.
    """
    projects = tuple(confirmed_projects)
    if scope != GLOBAL or project in projects or not projects:
        return ScopeChange(scope, projects, changed=False)
    home = projects[-1]
    return ScopeChange(project_scope(home), (home,), changed=True)


def over_cap(rows: Sequence[tuple[str, str]], cap: int) -> list[str]:
    """The lessons beyond each scope's cap of active lessons (design sources: adaptive memory).

    ``rows`` are ``(lesson_id, scope)`` pairs of the active lessons, in keep order (the
    store's: highest confidence first, then newest, then id); the tail of each scope beyond
    ``cap`` is what goes, so the least trusted and oldest make room.
    """
    kept: dict[str, int] = {}
    out: list[str] = []
    for lesson_id, scope in rows:
        kept[scope] = kept.get(scope, 0) + 1
        if kept[scope] > cap:
            out.append(lesson_id)
    return out
