"""The node setting ``declared_tools``: the tools a node's agents use, which a situation
lesson from a peer must be about (design sources: adaptive recovery), validated and wired into the
import filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet.blocker import DECLARED_TOOLS, PROBE, SIGN_IN
from lamarck.fleet.supervisor import FleetSpec
from lamarck.node.config import DeclaredToolSetting, load_settings
from lamarck.node.daemon import parse_args
from lamarck.node.params import node_params
from lamarck.policy.filters import DeclaredTool

GH = {"tool": "check_cli_setup", "unblock": ["run `gh auth login`"], "probe": ["gh auth status"]}
GH_TOOL = DeclaredTool(
    "check_cli_setup", frozenset({"run `gh auth login`"}), frozenset({"gh auth status"})
)


def test_by_default_a_node_declares_no_tool(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path)
    assert settings.declared_tools == ()
    assert node_params(settings).filters.declared_tools == ()


def test_flags_give_one_json_object_per_tool_and_reach_the_import_filter(tmp_path: Path) -> None:
    flags = parse_args([f"--declared-tools={json.dumps(GH)}", '--declared-tools={"tool": "x"}'])
    settings = load_settings(home=tmp_path, **flags)
    assert settings.declared_tools == (
        DeclaredToolSetting(**GH),  # type: ignore[arg-type]
        DeclaredToolSetting(tool="x"),
    )
    assert node_params(settings).filters.declared_tools == (GH_TOOL, DeclaredTool("x"))


def test_the_homes_config_file_declares_a_table_per_tool(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text(
        '[[declared_tools]]\ntool = "check_cli_setup"\n'
        'unblock = ["run `gh auth login`"]\nprobe = ["gh auth status"]\n'
    )
    assert node_params(load_settings(home=tmp_path)).filters.declared_tools == (GH_TOOL,)


def test_the_environment_gives_a_json_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAMARCK_DECLARED_TOOLS", json.dumps([GH]))
    assert node_params(load_settings(home=tmp_path)).filters.declared_tools == (GH_TOOL,)


@pytest.mark.parametrize(
    "entries",
    [
        ["{not json"],
        [json.dumps({"tool": "gh cli"})],  # not a bare name
        [json.dumps({"tool": ""})],
        [json.dumps({"tool": "gh", "probe": ["  "]})],  # a blank command
        [json.dumps({"tool": "gh", "run": ["x"]})],  # an unknown key
        [json.dumps({"tool": "gh"}), json.dumps({"tool": "gh", "probe": ["p"]})],  # twice
    ],
)
def test_a_bad_declaration_is_refused_naming_the_field(tmp_path: Path, entries: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, declared_tools=entries)
    assert str(err.value.details["field"]).startswith("declared_tools")


def test_the_blocker_fleet_declares_the_cli_tool_with_its_remedies(tmp_path: Path) -> None:
    # What every node of `lamarck fleet up --workload blocker` runs with.
    spec = FleetSpec(directory=tmp_path, nodes=3, declared_tools=DECLARED_TOOLS)
    settings = load_settings(home=tmp_path, declared_tools=list(spec.declared_tools))
    [tool] = node_params(settings).filters.declared_tools
    assert tool == DeclaredTool("check_cli_setup", frozenset({SIGN_IN}), frozenset({PROBE}))


def test_a_fleet_refuses_a_bad_declaration_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        FleetSpec(directory=tmp_path, declared_tools=('{"tool": "a b"}',))
    assert err.value.details["field"] == "declared_tools"
