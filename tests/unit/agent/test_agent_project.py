"""project_digest(path) keys a checkout exactly as the store's scope rules do."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lamarck.agent import project_digest, project_scope_of
from lamarck.errors import InvalidRecord
from lamarck.learning.scopes import project_digest as store_digest
from lamarck.learning.scopes import validate_scope

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(path: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, env=env)


def test_a_checkout_is_keyed_by_its_remote_without_credentials(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "https://user:tok@github.com/acme/widgets.git/")
    expected = hashlib.sha256(b"remote:https://github.com/acme/widgets").hexdigest()
    assert project_digest(repo) == expected
    assert project_digest(repo) == store_digest("https://github.com/acme/widgets", None)


def test_every_clone_and_subdirectory_is_one_project(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for repo in (first, second):
        repo.mkdir()
        git(repo, "init", "-q")
        git(repo, "remote", "add", "origin", "git@github.com:acme/widgets.git")
    (first / "src" / "pkg").mkdir(parents=True)
    assert project_digest(first / "src" / "pkg") == project_digest(second)


def test_without_a_remote_the_checkout_top_level_realpath_is_the_key(tmp_path: Path) -> None:
    repo = tmp_path / "local"
    (repo / "sub").mkdir(parents=True)
    git(repo, "init", "-q")
    top = os.path.realpath(repo)
    assert project_digest(repo / "sub") == store_digest(None, top)


def test_outside_git_the_directory_realpath_is_the_key(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_digest(plain) == store_digest(None, os.path.realpath(plain))
    assert validate_scope(project_scope_of(plain)) == "project:" + project_digest(plain)


def test_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRecord) as caught:
        project_digest(tmp_path / "nope")
    assert caught.value.reason == "no_project"
