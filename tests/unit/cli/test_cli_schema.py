"""`lamarck schema memory|outcome|vote` prints the published JSON Schema."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.proto.schema import SCHEMA_KINDS, json_schema

runner = CliRunner()


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_schema_prints_the_kinds_json_schema(kind: str) -> None:
    result = runner.invoke(app, ["schema", kind])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json_schema(kind)
    assert result.stderr == ""


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_schema_json_flag_gives_the_same_parseable_document(kind: str) -> None:
    result = runner.invoke(app, ["schema", kind, "--json"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema == json_schema(kind)


def test_unknown_schema_kind_is_a_usage_error_on_one_line() -> None:
    result = runner.invoke(app, ["schema", "lesson"])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("lamarck: usage: ")
    assert "'kind'" in lines[0] and "memory" in lines[0]
