"""``project_digest(path)``: the project key of a checkout, exactly as the store expects it.

The key is :func:`lamarck.learning.scopes.project_digest` (SHA-256 of the normalised
``remote.origin.url``, credentials dropped; else of the checkout's realpath) — this module only
reads the two inputs from disk. Every clone and worktree of one repository is one project;
a directory outside git is keyed by its realpath.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lamarck.errors import InvalidRecord
from lamarck.learning.scopes import project_digest as digest_of
from lamarck.learning.scopes import project_scope

__all__ = ["GIT_TIMEOUT_S", "project_digest", "project_scope_of", "remote_url"]

#: Bound on one ``git`` call (reading config is instant; a hung git must not hang an agent).
GIT_TIMEOUT_S = 10.0


def _git(path: Path, *args: str) -> str | None:
    """``git -C path args`` stdout stripped, or None when git is absent or says no."""
    try:
        done = subprocess.run(
            ["git", "-C", str(path), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            # A user's GIT_DIR would make every directory look like that one repository.
            env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def remote_url(path: str | Path) -> str | None:
    """The ``remote.origin.url`` of the checkout holding ``path`` (None outside git)."""
    return _git(Path(path), "config", "--get", "remote.origin.url")


def project_digest(path: str | Path = ".") -> str:
    """The project digest of the checkout holding ``path`` (remote URL, else realpath).

    Without a remote, the realpath is the checkout's top level when ``path`` is inside git
    (any subdirectory is the same project), else ``path`` itself.
    """
    where = Path(path).expanduser()
    if not where.is_dir():
        raise InvalidRecord(f"{where} is not a directory", reason="no_project")
    url = remote_url(where)
    top = _git(where, "rev-parse", "--show-toplevel")
    return digest_of(url, os.path.realpath(top or where))


def project_scope_of(path: str | Path = ".") -> str:
    """The ``project:<digest>`` scope of the checkout holding ``path``."""
    return project_scope(project_digest(path))
