"""The package must import from a built wheel installed in a fresh virtualenv, not only editable."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

SUBPACKAGES = [
    "lamarck",
    "lamarck.proto",
    "lamarck.node",
    "lamarck.registry",
    "lamarck.consensus",
    "lamarck.reputation",
    "lamarck.domain",
    "lamarck.learning",
    "lamarck.policy",
    "lamarck.gossip",
    "lamarck.health",
    "lamarck.fleet",
    "lamarck.sim",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel and what its build printed."""
    out = tmp_path_factory.mktemp("wheel")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        cwd=out,
        capture_output=True,
        text=True,
    )
    wheels = list(out.glob("lamarck_net-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], res.stdout + res.stderr


@pytest.fixture(scope="module")
def wheel(built: tuple[Path, str]) -> Path:
    return built[0]


def test_wheel_builds_without_package_data_warnings(built: tuple[Path, str]) -> None:
    """Data folders (migrations, console assets) are declared, so an install is quiet."""
    printed = built[1]
    assert "absent from the `packages` configuration" not in printed
    assert "would be ignored" not in printed


def test_wheel_installs_into_fresh_venv_and_every_subpackage_imports(
    wheel: Path, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )
    # Dependencies come from the dev environment's site-packages through a .pth line, which
    # (unlike a site dir) does not run that environment's .pth files, so the editable
    # install's import hook stays out and lamarck can only come from the wheel.
    fresh_site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(fresh_site) / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    code = (
        "import importlib, pathlib, lamarck\n"
        f"mods = {SUBPACKAGES!r}\n"
        "for m in mods: importlib.import_module(m)\n"
        "root = pathlib.Path(lamarck.__file__).parent\n"
        "print(root)\n"
        "assert (root / 'py.typed').is_file()\n"
        "for sub in ('proto', 'node', 'registry', 'consensus', 'reputation'):\n"
        "    assert (root / sub / 'py.typed').is_file(), sub\n"
        "assert issubclass(lamarck.InvalidRecord, lamarck.LamarckError)\n"
    )
    res = subprocess.run(
        [str(py), "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    installed_at = Path(res.stdout.strip().splitlines()[-1])
    assert installed_at.is_relative_to(env_dir), installed_at
    assert not installed_at.is_relative_to(ROOT)


def test_wheel_ships_migrations_and_generated_stubs(wheel: Path) -> None:
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    assert "lamarck/py.typed" in names
    assert any(n.startswith("lamarck/node/") for n in names)
    sql = [
        n for n in names if n.startswith("lamarck/node/store/migrations/") and n.endswith(".sql")
    ]
    assert sql, "migrations must ship in the wheel"
    assert "lamarck/node/console/static/console.css" in names
    assert "lamarck/node/console/static/console.js" in names
    assert any(n.startswith("lamarck/proto/v1/") and n.endswith("_pb2.py") for n in names)


def test_editable_install_resolves_to_the_source_folders() -> None:
    import lamarck.node
    import lamarck.proto

    assert Path(lamarck.proto.__file__).resolve().parent == ROOT / "proto"
    assert Path(lamarck.node.__file__).resolve().parent == ROOT / "node"
