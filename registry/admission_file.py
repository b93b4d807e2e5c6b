"""A node's own admission proof, kept in its home: what it presents again to a registry that
lost its data.

An endorsed node is admitted by an endorsement its endorser published into the registry's
Redis. If that Redis restarts without its data, the endorsement is gone and the node would be
refused (``no_endorsement``) forever, although nothing about its admission changed. So the
node keeps the endorsement it was admitted with in ``<home>/admission.json`` (written once it
is admitted, mode 0600, atomically) and presents it with every later registration. The
registry re-checks it exactly as the first time (signature, endorser admitted, expiry), so a
copy proves no more than the original did. A token-enrolled node needs nothing here: its
token stays in ``<home>/enrollment.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lamarck.errors import ConfigError, InvalidRecord
from lamarck.registry.records import Endorsement

__all__ = ["ADMISSION_FILE", "read_admission", "write_admission"]

#: File name of a node's stored admission proof, in its home.
ADMISSION_FILE = "admission.json"


def read_admission(path: Path) -> Endorsement | None:
    """The endorsement stored at ``path``, or ``None`` when there is no file.

    A file that is there but not an endorsement is a ``ConfigError``: a node told it holds
    a proof must not start as if it had none.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}", reason="bad_admission_file") from e
    try:
        return Endorsement.from_wire(json.loads(text))
    except (ValueError, InvalidRecord) as e:
        raise ConfigError(f"{path} is not an endorsement: {e}", reason="bad_admission_file") from e


def write_admission(path: Path, endorsement: Endorsement) -> None:
    """Store ``endorsement`` at ``path`` (0600), replacing any older one atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(endorsement.wire(), out, indent=2, sort_keys=True)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
