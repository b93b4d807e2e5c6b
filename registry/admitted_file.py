"""A node's admitted registration, kept in its home: the proof it presents to a registry that
lost its data, however long ago it was admitted.

``<home>/admission.json`` (``admission_file``) keeps the endorsement an endorsed node was
admitted with; it admits again only while it is valid (an endorsement lasts days). This file,
``<home>/admitted.json``, keeps the whole signed registration the registry admitted: its
admission material is judged at the registration's own date, as the registry judges every
stored proof (``lamarck.registry.proofs.verify_admission``), so it stays a proof after the
endorsement expired. It proves no more than the original: same id and key, an endorser still
admitted and not revoked, and a revoked id is refused whatever it presents. Written once when
the node is first admitted (mode 0600, atomically).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lamarck.errors import ConfigError, InvalidRecord
from lamarck.registry.records import Registration

__all__ = ["ADMITTED_FILE", "read_admitted", "write_admitted"]

#: File name of a node's kept admitted registration, in its home.
ADMITTED_FILE = "admitted.json"


def read_admitted(path: Path) -> Registration | None:
    """The registration kept at ``path``, or ``None`` when there is no file; a file that is
    there but not a registration is a ``ConfigError`` (``bad_admitted_file``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}", reason="bad_admitted_file") from e
    try:
        return Registration.from_wire(json.loads(text))
    except (ValueError, InvalidRecord) as e:
        raise ConfigError(f"{path} is not a registration: {e}", reason="bad_admitted_file") from e


def write_admitted(path: Path, registration: Registration) -> None:
    """Keep ``registration`` at ``path`` (0600), replacing any older one atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(registration.wire(), out, indent=2, sort_keys=True)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
