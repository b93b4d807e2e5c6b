"""Scopes: project digest (never the path), promotion from 2 projects, demotion from a third."""

from __future__ import annotations

import pytest

from lamarck.errors import InvalidRecord
from lamarck.learning.params import LessonParams
from lamarck.learning.scopes import (
    GLOBAL,
    after_confirmation,
    after_contradiction,
    project_digest,
    project_scope,
    recall_scopes,
    validate_scope,
)

P = LessonParams()


def test_project_digest_prefers_the_remote_url_and_never_contains_the_path() -> None:
    d1 = project_digest("https://github.com/acme/app.git", "/home/alice/work/app")
    d2 = project_digest("https://github.com/acme/app", "/tmp/worktree-2")
    assert d1 == d2
    assert "alice" not in d1 and len(d1) == 64


def test_project_digest_ignores_credentials_in_the_remote_url() -> None:
    with_token = project_digest("https://user:s3cretT0ken@github.com/acme/app.git", None)
    assert with_token == project_digest("https://github.com/acme/app", None)


def test_project_digest_falls_back_to_the_realpath() -> None:
    assert project_digest(None, "/srv/a") != project_digest(None, "/srv/b")
    with pytest.raises(InvalidRecord):
        project_digest(None, None)


def test_recall_in_a_project_sees_that_project_and_global_only() -> None:
    scope = project_scope("ab" * 32)
    assert recall_scopes(scope) == (scope, GLOBAL)
    with pytest.raises(InvalidRecord):
        validate_scope("project:/home/alice")


def test_project_lesson_is_promoted_when_confirmed_from_two_distinct_projects() -> None:
    scope = project_scope("aa" * 32)
    first = after_confirmation(scope, (), "aa" * 32, P)
    assert first.scope == scope and not first.changed
    again = after_confirmation(scope, first.confirmed_projects, "aa" * 32, P)
    assert again.scope == scope
    second = after_confirmation(scope, again.confirmed_projects, "bb" * 32, P)
    assert second.scope == GLOBAL and second.changed


def test_global_lesson_contradicted_from_a_third_project_is_demoted_to_the_last_confirmer() -> None:
    change = after_contradiction(GLOBAL, ("aa" * 32, "bb" * 32), "cc" * 32)
    assert change.changed and change.scope == project_scope("bb" * 32)
    assert change.confirmed_projects == ("bb" * 32,)


def test_global_lesson_contradicted_from_a_confirming_project_stays_global() -> None:
    assert not after_contradiction(GLOBAL, ("aa" * 32, "bb" * 32), "aa" * 32).changed
