"""A node's admission proof, kept in its home: what it presents to a registry that lost its
data, however long ago it was admitted and however often it rotated its key since.

``<home>/admitted.json`` holds an ``AdmissionProof``: the signed registration the registry
admitted this id with and the id's key-rotation records since, exactly as the registry keeps
them (``admission:<id>``, ``rotations:<id>``; the node copies them from the registry after
each registration, ``RegistryClient``). The registry judges it as it judges every stored
proof (``lamarck.registry.proofs.verify_admission``): the admission material at the
registration's own date, so it stays a proof after its endorsement or token expired, and the
rotation chain link by link from the key the id is derived from, so a node that rotated its
key gets back in under its current key. It proves no more than the original: the same id, a
chain signed by the keys it retires, an endorser still admitted and not revoked; a revoked id
is refused whatever it presents. Written mode 0600, atomically.

A file from an earlier build holding the bare registration (no rotations) is still read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lamarck.errors import ConfigError, InvalidRecord
from lamarck.registry.records import AdmissionProof, Registration

__all__ = ["ADMITTED_FILE", "read_admitted", "write_admitted"]

#: File name of a node's kept admission proof, in its home.
ADMITTED_FILE = "admitted.json"


def read_admitted(path: Path) -> AdmissionProof | None:
    """The proof kept at ``path``, or ``None`` when there is no file; a file that is there
    but not a proof is a ``ConfigError`` (``bad_admitted_file``): a node told it holds a proof
    must not start as if it had none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}", reason="bad_admitted_file") from e
    try:
        obj = json.loads(text)
        if isinstance(obj, dict) and "registration" not in obj:
            # The first format: the admitted registration alone.
            return AdmissionProof(Registration.from_wire(obj))
        return AdmissionProof.from_wire(obj)
    except (ValueError, InvalidRecord) as e:
        raise ConfigError(
            f"{path} is not an admission proof: {e}", reason="bad_admitted_file"
        ) from e


def write_admitted(path: Path, proof: AdmissionProof) -> None:
    """Keep ``proof`` at ``path`` (0600), replacing any older one atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(proof.wire(), out, indent=2, sort_keys=True)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
