"""Generate the protobuf/gRPC stubs in proto/v1/ from proto/lamarck/v1/*.proto.

Usage: ``python tools/gen_proto.py`` writes the stubs; ``python tools/gen_proto.py --check``
regenerates into a temporary directory and exits 1, naming the files that differ, when the
committed stubs are not byte-for-byte what the schema generates (CI runs it).

The .proto files declare ``package lamarck.v1`` and live under the include root ``proto/``,
so protoc writes ``lamarck/v1/x_pb2.py`` with imports ``from lamarck.v1 import y_pb2``. The
installed package is ``lamarck.proto.v1`` (``proto/`` maps to ``lamarck.proto``), so those
imports are rewritten; the protobuf package name and the descriptors are left as they are.
Generation is deterministic: sorted inputs, one protoc run, no timestamps.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE_ROOT = ROOT / "proto"
SCHEMA_DIR = INCLUDE_ROOT / "lamarck" / "v1"
OUT_DIR = INCLUDE_ROOT / "v1"
GENERATED_SUBDIR = Path("lamarck") / "v1"

INIT_TEXT = '''"""Generated stubs of the lamarck wire schema (protobuf package ``lamarck.v1``).

Do not edit: the source is proto/lamarck/v1/*.proto; regenerate with ``make proto``.
"""
'''

# `from lamarck.v1 import x_pb2` (python, grpc) and `import lamarck.v1.x_pb2` / references
# `lamarck.v1.x_pb2.Name` (mypy stubs), plus the module name passed to the descriptor builder.
# Only names of generated modules (`*_pb2`, `*_pb2_grpc`) are touched: descriptor contents such
# as the package `lamarck.v1` or the type `.lamarck.v1.SignedRecord` stay as declared.
_FROM_IMPORT = re.compile(r"^from lamarck\.v1 import ", re.MULTILINE)
_MODULE_NAME = re.compile(r"\blamarck\.v1\.(\w+_pb2(?:_grpc)?)\b")


def _tool_dir() -> Path:
    """The directory of the running interpreter's scripts (the venv's bin/)."""
    return Path(sys.executable).parent


def _well_known_include() -> Path:
    """grpc_tools' copy of the well-known protos (google/protobuf/*.proto)."""
    import grpc_tools

    return Path(grpc_tools.__file__).resolve().parent / "_proto"


def _plugin(name: str) -> str:
    """Path to a protoc plugin installed next to this interpreter (mypy-protobuf)."""
    path = _tool_dir() / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            raise SystemExit(f"gen_proto: {name} not found (install mypy-protobuf in the venv)")
        path = Path(found)
    return str(path)


def rewrite_imports(text: str) -> str:
    """Map generated ``lamarck.v1`` module references onto the ``lamarck.proto.v1`` package."""
    text = _FROM_IMPORT.sub("from lamarck.proto.v1 import ", text)
    return _MODULE_NAME.sub(r"lamarck.proto.v1.\1", text)


def generate(dest: Path) -> None:
    """Run protoc over the schema and write the rewritten stubs and ``__init__.py`` into dest."""
    from grpc_tools import protoc

    sources = sorted(p.relative_to(INCLUDE_ROOT).as_posix() for p in SCHEMA_DIR.glob("*.proto"))
    if not sources:
        raise SystemExit(f"gen_proto: no .proto files in {SCHEMA_DIR}")
    with tempfile.TemporaryDirectory(prefix="lamarck-proto-") as raw:
        args = [
            "grpc_tools.protoc",
            f"--proto_path={INCLUDE_ROOT}",
            f"--proto_path={_well_known_include()}",
            f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
            f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
            f"--python_out={raw}",
            f"--grpc_python_out={raw}",
            # `quiet`: mypy-protobuf otherwise prints a line per file it writes.
            f"--mypy_out=quiet:{raw}",
            f"--mypy_grpc_out=quiet:{raw}",
            *sources,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("gen_proto: protoc failed (see the messages above)")
        generated = Path(raw) / GENERATED_SUBDIR
        dest.mkdir(parents=True, exist_ok=True)
        for path in sorted(generated.iterdir()):
            text = path.read_text(encoding="utf-8")
            (dest / path.name).write_bytes(rewrite_imports(text).encode("utf-8"))
    (dest / "__init__.py").write_bytes(INIT_TEXT.encode("utf-8"))


def _files(directory: Path) -> dict[str, bytes]:
    """The generated files of a stub directory (name -> bytes), caches left out."""
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and p.suffix in {".py", ".pyi"}
    }


def differences(committed: Path, fresh: Path) -> list[str]:
    """One line per file that is missing, extra or different in ``committed``."""
    want, have = _files(fresh), _files(committed) if committed.is_dir() else {}
    lines = [f"missing: {name}" for name in sorted(want.keys() - have.keys())]
    lines += [f"stale (not generated): {name}" for name in sorted(have.keys() - want.keys())]
    lines += [
        f"differs: {name}" for name in sorted(want.keys() & have.keys()) if want[name] != have[name]
    ]
    return lines


def write(dest: Path) -> None:
    """Regenerate dest from scratch, removing stubs the schema no longer produces."""
    with tempfile.TemporaryDirectory(prefix="lamarck-proto-out-") as tmp:
        fresh = Path(tmp)
        generate(fresh)
        dest.mkdir(parents=True, exist_ok=True)
        for name in sorted(_files(dest).keys() - _files(fresh).keys()):
            (dest / name).unlink()
        for name, data in _files(fresh).items():
            target = dest / name
            if not target.exists() or target.read_bytes() != data:
                target.write_bytes(data)


def check(dest: Path) -> int:
    """0 when dest holds exactly what the schema generates; else 1, after naming the diffs."""
    with tempfile.TemporaryDirectory(prefix="lamarck-proto-check-") as tmp:
        fresh = Path(tmp)
        generate(fresh)
        lines = differences(dest, fresh)
    if lines:
        rel = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
        print(
            f"gen_proto: {rel} is out of date with the schema; run `make proto`:", file=sys.stderr
        )
        for line in lines:
            print(f"  {line}", file=sys.stderr)
        return 1
    print("gen_proto: generated stubs are up to date")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description="Generate the lamarck.proto.v1 stubs.")
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed stubs differ from the schema"
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        return check(args.out)
    write(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
