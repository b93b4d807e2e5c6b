"""``python -m bench.liars`` without fleets: a run's figures become the gate's comparison."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bench.liars as liars  # noqa: E402


def test_each_run_compares_the_gate_and_the_fleet_without_liars(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[int, int, int]] = []

    def fake_run(
        nodes: int, byz: int, agents: int, rounds: int, seed: int, base_port: int = 0
    ) -> dict[str, float]:
        calls.append((nodes, byz, seed))
        base = {"gate_on_turns": 100.0, "gate_off_turns": 80.0}
        if byz:
            return {
                **base,
                "gate_on_poisoned_decisions": float(seed),
                "gate_off_poisoned_decisions": 10.0,
                "gate_on_repeated_known_mistakes": 3.0,
            }
        return {**base, "gate_off_poisoned_decisions": 0.0, "gate_on_repeated_known_mistakes": 1.0}

    monkeypatch.setattr(liars, "fleet_run", fake_run)
    liars.main(["--runs", "2", "--seed", "0"])
    # Each run: a fresh fleet with liars, then the same honest nodes without them (fresh
    # identities).
    assert calls == [(10, 3, 0), (7, 0, 0), (10, 3, 1), (7, 0, 1)]
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["gate_on_poisoned_decisions"] == 0.5
    assert figures["gate_on_poisoned_decisions_spread"] == 1.0
    assert figures["poisoned_decisions_ratio"] == 0.05
    assert figures["liars_repeated_per_100_turns_delta"] == 2.0


def test_the_control_may_run_the_liars_nodes_honest_instead(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[int, int, int]] = []

    def fake_run(
        nodes: int, byz: int, agents: int, rounds: int, seed: int, base_port: int = 0
    ) -> dict[str, float]:
        calls.append((nodes, byz, agents))
        return {"gate_on_turns": 100.0, "gate_off_poisoned_decisions": 0.0}

    monkeypatch.setattr(liars, "fleet_run", fake_run)
    liars.main(["--runs", "1", "--control", "replaced"])
    assert calls == [(10, 3, 20), (10, 0, 20)]
    assert "the liars' nodes replaced" in capsys.readouterr().out
