"""``lamarck fleet up --workload blocker|byzantine|planted-control|retrieval-poisoning``
without a fleet.

The full runs take minutes on real nodes (by hand: ``lamarck fleet up --workload NAME``);
here ``Fleet`` is a stand-in that starts nothing, so what is checked is the command's part:
every name is accepted and sized before anything starts, a bad name or size is a typed
refusal, and a scenario runs through the scenario functions the integration tests call,
three times, its figures printed with mean and spread.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.cli import fleet as fleet_cli
from lamarck.fleet import scenarios
from lamarck.fleet.scenarios import REPEATS, SCENARIOS

runner = CliRunner()

NEW = (
    "blocker",
    "byzantine",
    "planted-control",
    "retrieval-poisoning",
    "authority-claims",
    "quiet-steering",
)
#: The least nodes each scenario runs on in the tests below (the planted control: 1 + 4 voters).
NODES = {"planted-control": 5}


@pytest.fixture(autouse=True)
def _no_developer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LAMARCK_"):
            monkeypatch.delenv(name)


class FakeFleet:
    """Starts nothing: records its spec and whether it was stopped."""

    made: ClassVar[list[FakeFleet]] = []
    interrupt_on_up = False

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.dir = spec.directory
        self.stopped = False
        self.nodes = [
            SimpleNamespace(
                name=f"node{i + 1}",
                node_id=f"id{i + 1}",
                agent_addr=f"127.0.0.1:{9 + i}",
                metrics_url="",  # scraped as "down": no node answers here
                home=self.dir / "nodes" / f"node{i + 1}",
            )
            for i in range(spec.nodes)
        ]
        FakeFleet.made.append(self)

    def up(self, say: Any) -> None:
        if FakeFleet.interrupt_on_up:
            raise KeyboardInterrupt  # Ctrl-C while the fleet starts

    def stop(self, say: Any) -> None:
        self.stopped = True


@pytest.fixture
def fake_fleet(monkeypatch: pytest.MonkeyPatch) -> type[FakeFleet]:
    FakeFleet.made = []
    FakeFleet.interrupt_on_up = False
    monkeypatch.setattr(fleet_cli, "Fleet", FakeFleet)
    monkeypatch.setattr(fleet_cli, "_reputation_rows", lambda addr, home, names: None)
    return FakeFleet


def _up(tmp_path: Path, *args: str) -> Any:
    return runner.invoke(app, ["fleet", "up", "--dir", str(tmp_path / "fleet"), *args])


def test_an_unknown_workload_is_refused_before_anything_starts(
    tmp_path: Path, fake_fleet: type[FakeFleet]
) -> None:
    result = _up(tmp_path, "--workload", "byzantium")
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lamarck: unknown_workload: unknown workload 'byzantium'")
    assert all(name in line for name in NEW)  # the known names are listed
    assert fake_fleet.made == [] and not (tmp_path / "fleet").exists()


@pytest.mark.parametrize(
    ("name", "nodes", "byzantine"),
    [
        ("blocker", 3, 0),
        ("byzantine", 10, 3),
        ("planted-control", 5, 0),
        ("retrieval-poisoning", 10, 3),
        ("authority-claims", 8, 2),
        ("quiet-steering", 8, 2),
    ],
)
def test_each_scenario_is_accepted_at_its_full_size_and_ctrl_c_stops_the_fleet(
    tmp_path: Path, fake_fleet: type[FakeFleet], name: str, nodes: int, byzantine: int
) -> None:
    fake_fleet.interrupt_on_up = True
    result = _up(tmp_path, "--workload", name)
    assert result.exit_code == 0, result.output
    [fleet] = fake_fleet.made
    assert (fleet.spec.nodes, fleet.spec.byzantine) == (nodes, byzantine)
    assert fleet.stopped and "fleet stopped" in result.output


def test_a_reduced_fleet_keeps_the_scenarios_share_of_attackers(
    tmp_path: Path, fake_fleet: type[FakeFleet]
) -> None:
    fake_fleet.interrupt_on_up = True
    assert _up(tmp_path, "--workload", "byzantine", "--nodes", "4").exit_code == 0
    assert (fake_fleet.made[0].spec.nodes, fake_fleet.made[0].spec.byzantine) == (4, 1)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--workload", "byzantine", "--nodes", "2"), "too_few_nodes"),
        (("--workload", "byzantine", "--nodes", "4", "--byzantine", "0"), "no_attacker"),
        (("--workload", "retrieval-poisoning", "--byzantine", "0"), "no_attacker"),
        (("--workload", "retrieval-poisoning", "--nodes", "3", "--byzantine", "3"), "too_few"),
        (("--workload", "blocker", "--byzantine", "1"), "conflicting_options"),
        (("--workload", "blocker", "--nodes", "1"), "too_few_nodes"),
        (("--workload", "byzantine", "--agents", "4"), "conflicting_options"),
    ],
)
def test_a_size_a_scenario_cannot_run_on_is_a_typed_refusal_before_anything_starts(
    tmp_path: Path, fake_fleet: type[FakeFleet], args: tuple[str, ...], reason: str
) -> None:
    result = _up(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"lamarck: {reason}"), result.stderr
    assert fake_fleet.made == []


# -- a scenario runs through the same functions as the integration tests -------------------


def _fake_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, Any]]:
    """Replace the scenario functions by fakes that record how they were called."""
    calls: list[tuple[str, Any, Any]] = []
    turn = SimpleNamespace(status="blocked", steps=2)

    def blocker(fleet: Any, project: str) -> Any:
        calls.append(("blocker", project, None))
        return SimpleNamespace(
            first=turn,
            second=turn,
            lesson_shared=False,
            not_shared_reason="no_evidence",
            node2_copy="",
            figures=lambda: {"session1_steps": 3.0, "session2_steps": 2.0},
        )

    def byzantine(fleet: Any, seed: int, params: Any, say: Any, *, tag: str) -> Any:
        calls.append(("byzantine", seed, tag))
        say("attack phase")
        return SimpleNamespace(
            pushes=[],
            figures=lambda: {"poisoned_in_honest_prompts": 0.0, "byz_pushes": 10.0 + seed},
        )

    def poisoning(fleet: Any, seed: int, params: Any, say: Any, *, tag: str) -> Any:
        calls.append(("retrieval-poisoning", seed, (tag, params.targets, params.embedder)))
        return SimpleNamespace(
            pushes=[], where=[], figures=lambda: {"defended_attack_success": 0.0}
        )

    def planted(fleet: Any, tag: str, say: Any) -> Any:
        calls.append(("planted-control", tag, None))
        return SimpleNamespace(
            forged=list, in_prompts=[], figures=lambda: {"planted_in_prompts": 0.0}
        )

    def authority(fleet: Any, params: Any, say: Any, *, tag: str) -> Any:
        calls.append(("authority-claims", tag, None))
        return SimpleNamespace(where=[], figures=lambda: {"gate_on_claims_reached": 0.0})

    def steering(fleet: Any, seed: int, params: Any, say: Any, *, tag: str) -> Any:
        calls.append(("quiet-steering", seed, tag))
        return SimpleNamespace(where=[], figures=lambda: {"steered_share_ratio": 0.0})

    monkeypatch.setattr(scenarios, "run_authority", authority)
    monkeypatch.setattr(scenarios, "run_steering", steering)
    monkeypatch.setattr(scenarios, "run_blocker", blocker)
    monkeypatch.setattr(scenarios, "run_planted_certificates", planted)
    monkeypatch.setattr(scenarios, "run_byzantine", byzantine)
    monkeypatch.setattr(scenarios, "run_poisoning", poisoning)
    return calls


@pytest.mark.parametrize("name", NEW)
def test_a_scenario_runs_three_times_and_prints_its_figures_with_mean_and_spread(
    tmp_path: Path, fake_fleet: type[FakeFleet], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    calls = _fake_runs(monkeypatch)
    nodes = NODES.get(name, 4)
    result = _up(
        tmp_path, "--workload", name, "--nodes", str(nodes), "--seed", "7", "--exit", "--json"
    )
    assert result.exit_code == 0, result.output
    assert [c[0] for c in calls] == [name] * REPEATS
    # Each run on its own project or tag: runs never meet each other's lessons.
    assert len({repr(c[1:]) for c in calls}) == REPEATS
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["scenario_runs"] == REPEATS and figures["fleet_nodes"] == nodes
    assert "scenario_goal_met" in figures
    scenario_figures = {k for k in figures if not k.startswith(("fleet_", "scenario_"))}
    assert scenario_figures and all(
        f"{k}_spread" in figures for k in scenario_figures if not k.endswith("_spread")
    )
    assert f"{name}: {REPEATS} run(s) on one fleet" in result.stderr  # the table
    assert "goal:" in result.stderr
    assert fake_fleet.made[0].stopped


def test_byzantine_runs_differ_by_seed_and_their_spread_is_reported(
    tmp_path: Path, fake_fleet: type[FakeFleet], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_runs(monkeypatch)
    result = _up(tmp_path, "--workload", "byzantine", "--nodes", "4", "--exit", "--json")
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["byz_pushes"] == 11.0  # 10, 11, 12
    assert figures["byz_pushes_spread"] == pytest.approx(0.8165, abs=1e-4)
    assert figures["scenario_goal_met"] == 0.0  # the fake reports no graylisting


def test_retrieval_poisoning_uses_every_target_and_the_fleets_embedder(
    tmp_path: Path, fake_fleet: type[FakeFleet], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_runs(monkeypatch)
    _up(tmp_path, "--workload", "retrieval-poisoning", "--nodes", "4", "--exit")
    from lamarck.fleet.workloads import TARGETS

    assert {c[2][1:] for c in calls} == {(len(TARGETS), "hashing")}


def test_every_scenario_name_is_a_workload_name_distinct_from_the_driver_workloads() -> None:
    from lamarck.fleet.workloads import WORKLOADS

    assert set(NEW) == set(SCENARIOS)
    assert not set(SCENARIOS) & set(WORKLOADS)
    assert scenarios.workload_names() == sorted({*WORKLOADS, *SCENARIOS})


def test_the_plausible_liars_fleet_puts_each_liar_under_its_own_operator_and_gates_half(
    tmp_path: Path, fake_fleet: type[FakeFleet]
) -> None:
    fake_fleet.interrupt_on_up = True
    result = _up(tmp_path, "--workload", "plausible-liars", "--nodes", "10", "--byzantine", "3")
    assert result.exit_code == 0, result.output
    [fleet] = fake_fleet.made
    spec = fleet.spec
    assert spec.own_principals and spec.operators == 6  # 3 liars + 3 honest operators
    assert [spec.operator_of(i) for i in range(10)] == [0, 1, 2, 0, 1, 2, 0, 3, 4, 5]
    assert spec.gate_off == (1, 3, 5)  # every other honest node: the gate-off arm
    # Another workload keeps one operator and every gate on.
    fake_fleet.made = []
    _up(tmp_path, "--workload", "pitfalls", "--nodes", "5", "--byzantine", "1")
    [plain] = fake_fleet.made
    assert plain.spec.gate_off == () and not plain.spec.own_principals
