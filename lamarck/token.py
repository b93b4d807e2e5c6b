"""The node's two bearer tokens: the agent token and the operator token.

* The **agent token** guards the agent API when it listens beyond loopback. On loopback or a
  unix socket only local processes can reach the agent API, so no agent token is needed.
  The node generates ``<home>/agent.token`` on first need.
* The **operator token** is the operator's credential: every ``OperatorService`` call and
  every console session needs it, on loopback too (any local process can be an agent; only
  whoever can read the node's home is its operator). The node generates
  ``<home>/operator.token`` at its first start.

Both are 256 random bits in a file of mode 0600, carried as ``authorization: Bearer
<token>``. They are distinct secrets: holding the agent token grants no operator power. The
comparison is constant-time so a remote caller cannot learn a token byte by byte from
response timings.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from lamarck.errors import KeyFileError

__all__ = [
    "AUTHORIZATION_KEY",
    "OPERATOR_TOKEN_FILE",
    "TOKEN_FILE",
    "bearer_metadata",
    "ensure_agent_token",
    "ensure_operator_token",
    "presented_token",
    "read_agent_token",
    "read_operator_token",
    "token_matches",
]

TOKEN_FILE = "agent.token"
#: ``<home>/operator.token``: the operator's credential (never handed to an agent).
OPERATOR_TOKEN_FILE = "operator.token"
#: gRPC metadata key (lower case, as gRPC requires) carrying ``Bearer <token>``.
AUTHORIZATION_KEY = "authorization"
_SCHEME = "bearer "
_TOKEN_BYTES = 32


def _check_private(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        # A token others can read is a token others can use: refuse rather than serve.
        raise KeyFileError(
            f"{path} is readable by group or others (mode {mode:o}); chmod 600 it",
            reason="key_file_permissions",
            path=str(path),
        )


def _read_token(path: Path, what: str) -> str:
    try:
        _check_private(path)
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError as e:
        raise KeyFileError(f"no {what} at {path}", reason="key_missing", path=str(path)) from e
    except (OSError, UnicodeDecodeError) as e:
        raise KeyFileError(f"cannot read {path}: {e}", reason="key_file", path=str(path)) from e
    if not token:
        raise KeyFileError(f"{path} is empty", reason="key_file", path=str(path))
    return token


def _ensure_token(home: Path, name: str, what: str) -> str:
    path = home / name
    home.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    try:
        # O_EXCL: never overwrite a token already handed out; 0600 from creation, so there
        # is no moment where the file is readable by others.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_token(path, what)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    return token


def read_agent_token(home: Path) -> str:
    """Read ``<home>/agent.token``; ``KeyFileError`` if missing, empty or not private."""
    return _read_token(home / TOKEN_FILE, "agent token")


def ensure_agent_token(home: Path) -> str:
    """Return the agent token, generating ``<home>/agent.token`` (0600) on first use."""
    return _ensure_token(home, TOKEN_FILE, "agent token")


def read_operator_token(home: Path) -> str:
    """Read ``<home>/operator.token``; ``KeyFileError`` if missing, empty or not private."""
    return _read_token(home / OPERATOR_TOKEN_FILE, "operator token")


def ensure_operator_token(home: Path) -> str:
    """Return the operator token, generating ``<home>/operator.token`` (0600) on first use."""
    return _ensure_token(home, OPERATOR_TOKEN_FILE, "operator token")


def presented_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The bearer token in a call's metadata, or ``None`` when there is none."""
    for key, value in metadata or ():
        if key.lower() != AUTHORIZATION_KEY:
            continue
        text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
        if text[: len(_SCHEME)].lower() == _SCHEME:
            return text[len(_SCHEME) :].strip()
    return None


def token_matches(expected: str, presented: str | None) -> bool:
    """Constant-time comparison of a presented token with the expected one."""
    if presented is None:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), presented.encode("utf-8"))


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``token`` (for clients and tests)."""
    return ((AUTHORIZATION_KEY, f"Bearer {token}"),)
