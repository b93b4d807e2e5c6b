"""The agent API's bearer token, for an agent API listening beyond loopback.

On loopback or a unix socket only local processes can reach the agent API, so no token is
needed. Anywhere else the node generates ``<home>/agent.token`` (256 random bits, mode 0600)
on first need and every agent call must carry ``authorization: Bearer <token>``. The
comparison is constant-time so a remote caller cannot learn the token byte by byte from
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
    "TOKEN_FILE",
    "bearer_metadata",
    "ensure_agent_token",
    "presented_token",
    "read_agent_token",
    "token_matches",
]

TOKEN_FILE = "agent.token"
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


def read_agent_token(home: Path) -> str:
    """Read ``<home>/agent.token``; ``KeyFileError`` if missing, empty or not private."""
    path = home / TOKEN_FILE
    try:
        _check_private(path)
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError as e:
        raise KeyFileError(f"no agent token at {path}", reason="key_missing", path=str(path)) from e
    except (OSError, UnicodeDecodeError) as e:
        raise KeyFileError(f"cannot read {path}: {e}", reason="key_file", path=str(path)) from e
    if not token:
        raise KeyFileError(f"{path} is empty", reason="key_file", path=str(path))
    return token


def ensure_agent_token(home: Path) -> str:
    """Return the agent token, generating ``<home>/agent.token`` (0600) on first use."""
    path = home / TOKEN_FILE
    home.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    try:
        # O_EXCL: never overwrite a token an operator already handed to an agent; 0600 from
        # creation, so there is no moment where the file is readable by others.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return read_agent_token(home)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    return token


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
