"""Benchmark of exposure before proof: what caution with unproven imports costs.

An imported lesson that no outcome of this node has confirmed yet (and nobody independent
has corroborated) enters at most ``unverified_plan_share`` of plan-time prompts, as a labelled
hint; the decision-time preamble (``CheckOperation``) never shows it as advice
(``learning/influence.py``). This bench runs the fleet learning curve of
``tests/integration/fleet/test_scenarios.py`` on real fleets, one fresh fleet per share and
arm (4 admitted nodes, hashing embedder, every node started with the share in its home's
``lamarck.toml``), for each share in ``--shares`` (default 1.0, 0.5, 0.25, 0.0; 1.0 offers
every unverified import as a hint in every prompt):

* **honest**: the ``fleet-learning-curve`` workload (8 agents, 4 rounds, seeds 0, 1, 2), the
  shared arm against the same agents isolated;
* **poisoners**: the same workload with 30 % of the agents fabricating their runs (seeds 10,
  11, 12, as the scenario test), honest agents only counted.

The seeds of an arm run one after another on its fleet, so what one run did to the nodes'
reputations carries into the next, as it does in a fleet that lives on.

Per run: known mistakes repeated (shared and isolated), steps (operations run) and the steps
sharing saved (isolated − shared), first-attempt success; the **exposure** the honest agents
of the shared arm saw, tallied from the nodes' own answers: plan-time prompts, imported
lessons in them and those still unproven here (origin imported, no local confirmation),
poisoned lessons (advising a pitfall's failing form) in plan-time prompts and in decision-time
preambles (contested preambles apart), poisoned lessons still active at the end; and what the
run did to trust: honest lessons the poisoners' fabricated outcomes contradicted (imported
ones), poisoned lessons honest outcomes contradicted, records imported and records refused
because their source was graylisted (summed over the nodes). The scripted agents decide from
the decision-time preamble alone, so what plan-time text is worth to a model that plans from
it is not measured here. Figures are means over the seeds; ``share<S>_*_ratio`` compares
share S with the share-1.0 baseline of the same run.

The last line is one JSON object of the figures. ``--quick``: shares 1.0 and 0.0, honest arm
only, one seed of a small workload (6 agents, 3 rounds) on 3 nodes (about 40 s on the 2-core
machine). ``--jsonl PATH`` appends every run's figures (with share, arm and seed) to PATH.

Usage: ``python -m bench.exposure [--quick] [--shares 1 0.5 0.25 0] [--seeds N]
[--arms honest poisoners] [--jsonl PATH]``
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lamarck.client import CheckResult, Client, Lesson, OutcomeResult, RecallResult
from lamarck.errors import ConfigError
from lamarck.fleet.agents import says_avoid, says_prefer
from lamarck.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.fleet.launcher import NodeProcess
from lamarck.fleet.report import SHARED, NodeCounts, learning_figures
from lamarck.fleet.supervisor import Fleet, FleetSpec
from lamarck.fleet.workloads import Workload, WorkloadParams, make_workload
from lamarck.node.config import CONFIG_FILE, load_settings

#: Seeds of the two arms, as the fleet scenario tests use them.
HONEST_SEEDS = (0, 1, 2)
POISONER_SEEDS = (10, 11, 12)
POISONER_SHARE = 0.3
BASELINE_SHARE = 1.0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- a fleet whose nodes run with a given share ------------------------------------------------


class ExposureFleet(Fleet):
    """A fleet whose every node reads ``unverified_plan_share`` from its home's config file."""

    def __init__(self, spec: FleetSpec, plan_share: float) -> None:
        super().__init__(spec)
        self.plan_share = plan_share

    def _spawn(self, i: int) -> NodeProcess:
        # The node's settings: flags > environment > <home>/lamarck.toml; the fleet passes no
        # such flag and strips LAMARCK_* from the environment, so the file is what it reads.
        home = self.dir / "nodes" / f"node{i + 1}"
        home.mkdir(parents=True, exist_ok=True)
        (home / CONFIG_FILE).write_text(f"unverified_plan_share = {self.plan_share!r}\n")
        got = load_settings(home=home).unverified_plan_share
        if got != self.plan_share:
            raise ConfigError(f"node{i + 1} would run with share {got}, not {self.plan_share}")
        return super()._spawn(i)


def _free_base() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return 20000 + port % 30000


@contextmanager
def exposure_fleet(directory: Path, nodes: int, plan_share: float) -> Iterator[Fleet]:
    """A fresh fleet at ``plan_share``; another port range when one is busy (5 tries)."""
    for attempt in range(5):
        fleet = ExposureFleet(
            FleetSpec(directory=directory / f"f{attempt}", nodes=nodes, base_port=_free_base()),
            plan_share,
        )
        try:
            fleet.up(_say)
        except ConfigError as e:
            if e.reason != "port_busy":
                raise
            continue
        try:
            yield fleet
        finally:
            fleet.stop(_say)
        return
    raise ConfigError("no free port range for a fleet after 5 tries", reason="port_busy")


# -- what the honest agents were shown ------------------------------------------------------------


@dataclass
class ExposureTally:
    """Lessons shown to the honest agents of the shared arm, at plan and decision time."""

    workload: Workload
    poisoners: frozenset[int]
    plan_prompts: int = 0
    imported_shown: int = 0
    unproven_shown: int = 0
    poisoned_shown: int = 0
    poisoned_unproven_shown: int = 0
    checks: int = 0
    poisoned_checks: int = 0
    contested_checks: int = 0
    # Honest lessons a poisoner's fabricated outcome contradicted (it can only touch what is
    # in play in its session: what its recall showed, and its own lessons), and the imported
    # ones among them; poisoned lessons an honest outcome contradicted.
    liar_contradicted: int = 0
    liar_contradicted_imported: int = 0
    poison_contradicted: int = 0
    _seen_unproven: set[str] = field(default_factory=set)

    def shared_agent(self, session_id: str) -> int | None:
        """The agent of a shared-arm session (``shared-r<round>-a<agent>``), else None."""
        arm, _, rest = session_id.partition("-r")
        agent = rest.rpartition("-a")[2]
        return int(agent) if arm == SHARED and agent.isdigit() else None

    def honest_shared(self, session_id: str) -> bool:
        """Whether a session is an honest agent's turn in the shared arm."""
        agent = self.shared_agent(session_id)
        return agent is not None and agent not in self.poisoners

    def poisoned(self, text: str) -> bool:
        """Whether ``text`` advises a pitfall's failing form (what a poisoner's lesson says)."""
        return any(
            says_prefer(text, p.failing) or says_avoid(text, p.working)
            for p in self.workload.pitfalls
        )

    def recalled(self, session_id: str, result: RecallResult) -> None:
        if not self.honest_shared(session_id):
            return
        self.plan_prompts += 1
        # Advice and the labelled unverified hints alike: both reach the prompt.
        for lesson in (*result.lessons, *result.hints):
            imported = lesson.origin == "imported"
            unproven = imported and lesson.success_count <= 0
            self.imported_shown += imported
            self.unproven_shown += unproven
            if unproven:
                self._seen_unproven.add(lesson.id)
            if self.poisoned(lesson.content):
                self.poisoned_shown += 1
                self.poisoned_unproven_shown += unproven

    def checked(self, session_id: str, result: CheckResult) -> None:
        if not self.honest_shared(session_id):
            return
        self.checks += 1
        # An unresolved conflict is no advice: the preamble names both sides (the agent then
        # keeps its habit), so it is counted apart from poisoned advice.
        if result.conflicts and not result.lessons:
            self.contested_checks += 1
        else:
            self.poisoned_checks += any(self.poisoned(x.content) for x in result.lessons)

    def outcome(self, session_id: str, contradicted: Sequence[Lesson]) -> None:
        agent = self.shared_agent(session_id)
        if agent is None:
            return
        for lesson in contradicted:
            poisoned = self.poisoned(lesson.content)
            if agent in self.poisoners and not poisoned:
                self.liar_contradicted += 1
                self.liar_contradicted_imported += lesson.origin == "imported"
            elif agent not in self.poisoners and poisoned:
                self.poison_contradicted += 1

    def figures(self) -> dict[str, float]:
        prompts = max(1, self.plan_prompts)
        return {
            "plan_prompts": float(self.plan_prompts),
            "imported_per_prompt": self.imported_shown / prompts,
            "unproven_per_prompt": self.unproven_shown / prompts,
            "unproven_lessons_shown": float(len(self._seen_unproven)),
            "poisoned_plan_exposures": float(self.poisoned_shown),
            "poisoned_unproven_plan_exposures": float(self.poisoned_unproven_shown),
            "checks": float(self.checks),
            "poisoned_decision_exposures": float(self.poisoned_checks),
            "contested_checks": float(self.contested_checks),
            "liar_contradicted": float(self.liar_contradicted),
            "liar_contradicted_imported": float(self.liar_contradicted_imported),
            "poison_contradicted": float(self.poison_contradicted),
        }


class TallyClient(Client):
    """The SDK client, tallying what recall and the decision-time check return."""

    def __init__(self, address: str, tally: ExposureTally, *, timeout: float) -> None:
        super().__init__(address, timeout=timeout)
        self._tally = tally

    def recall(self, task: str, *args: Any, **kwargs: Any) -> RecallResult:
        result: RecallResult = super().recall(task, *args, **kwargs)
        self._tally.recalled(str(kwargs.get("session_id", "")), result)
        return result

    def check_operation(self, operation: str, *args: Any, **kwargs: Any) -> CheckResult:
        result: CheckResult = super().check_operation(operation, *args, **kwargs)
        self._tally.checked(str(kwargs.get("session_id", "")), result)
        return result

    def record_outcome(self, outcome: Any) -> OutcomeResult:
        result: OutcomeResult = super().record_outcome(outcome)
        session = str(getattr(outcome, "session_id", "") or "")
        if self._tally.shared_agent(session) is not None:
            ids = result.ids("contradicted")
            self._tally.outcome(session, [self.get_lesson(i) for i in ids])
        return result


@dataclass
class TallyDriver(FleetDriver):
    """``FleetDriver`` whose clients tally the honest agents' exposure."""

    tally: ExposureTally | None = None

    def __enter__(self) -> TallyDriver:
        super().__enter__()
        assert self.tally is not None
        for c in self._clients:
            c.close()
        self._clients = [
            TallyClient(n.agent_addr, self.tally, timeout=self.params.rpc_timeout_s)
            for n in self.nodes
        ]
        return self


def poisoned_active(fleet: Fleet, tally: ExposureTally) -> tuple[int, float]:
    """Active lessons advising a failing form on every node now: count, mean confidence."""
    confidences = []
    for node in fleet.nodes:
        with Client(node.agent_addr) as client:
            token = ""
            while True:
                page = client.list_lessons(statuses=["active"], page_size=200, page_token=token)
                confidences += [x.confidence for x in page.lessons if tally.poisoned(x.content)]
                token = page.next_page_token
                if not token:
                    break
    return len(confidences), (statistics.mean(confidences) if confidences else 0.0)


# -- one run, one arm, one share -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sizes:
    """The workload's sizes (the scenario test's: 4 nodes, 8 agents, 4 rounds)."""

    nodes: int = 4
    agents: int = 8
    rounds: int = 4


def _delta(
    before: Sequence[NodeCounts | None],
    after: Sequence[NodeCounts | None],
    figure: Callable[[NodeCounts], float],
) -> float:
    """A counter's growth summed over the nodes (a node that did not answer counts 0)."""
    return sum(
        figure(b2) - figure(b1)
        for b1, b2 in zip(before, after, strict=True)
        if b1 is not None and b2 is not None
    )


def one_run(fleet: Fleet, arm: str, seed: int, sizes: Sizes) -> dict[str, float]:
    """One learning-curve run on ``fleet``: learning and exposure figures."""
    share = POISONER_SHARE if arm == "poisoners" else 0.0
    work = make_workload(
        "fleet-learning-curve",
        seed,
        WorkloadParams(
            nodes=len(fleet.nodes),
            agents=sizes.agents,
            rounds=sizes.rounds,
            poisoner_share=share,
            tag=f"-curve-{seed}",
        ),
    )
    handles = [NodeHandle(n.name, n.agent_addr, n.metrics_url, home=n.home) for n in fleet.nodes]
    tally = ExposureTally(work, work.poisoners)
    started = time.monotonic()
    with TallyDriver(handles, work, DriverParams(), random.Random(seed), tally=tally) as driver:
        before = driver.counts()
        figures = learning_figures(driver.run())
        after = driver.counts()
    # What the run did to sharing: records imported, and records refused because their source
    # had fallen to graylisted (reality's contradictions of a source's lessons lower it).
    figures["imports_accepted"] = _delta(before, after, lambda c: c.imported)
    figures["refused_graylisted"] = _delta(
        before, after, lambda c: c.rejected.get("graylisted_source", 0.0)
    )
    figures["run_s"] = round(time.monotonic() - started, 1)
    figures["steps_saved"] = figures["isolated_steps"] - figures["shared_steps"]
    figures.update(tally.figures())
    count, confidence = poisoned_active(fleet, tally)
    figures["poisoned_active_end"] = float(count)
    figures["poisoned_active_confidence"] = round(confidence, 4)
    return figures


def run_share(
    share: float, arms: Sequence[str], seeds: int, sizes: Sizes, jsonl: Path | None
) -> dict[str, dict[str, float]]:
    """Every arm at ``share``, each on a fresh fleet: mean figures per arm."""
    out: dict[str, dict[str, float]] = {}
    for arm in arms:
        chosen = (POISONER_SEEDS if arm == "poisoners" else HONEST_SEEDS)[:seeds]
        runs = []
        with tempfile.TemporaryDirectory(prefix="bench-exposure-") as tmp:
            started = time.monotonic()
            with exposure_fleet(Path(tmp), sizes.nodes, share) as fleet:
                _say(f"share {share}, {arm}: fleet up in {time.monotonic() - started:.0f} s")
                for seed in chosen:
                    figures = one_run(fleet, arm, seed, sizes)
                    _say(f"share {share}, {arm}, seed {seed}: {json.dumps(figures)}")
                    if jsonl is not None:
                        with jsonl.open("a") as f:
                            row = {"share": share, "arm": arm, "seed": seed, **figures}
                            f.write(json.dumps(row) + "\n")
                    runs.append(figures)
        keys = sorted(set().union(*runs))
        out[arm] = {k: round(statistics.mean(r.get(k, 0.0) for r in runs), 4) for k in keys} | {
            "runs": float(len(runs))
        }
    return out


# -- the table ---------------------------------------------------------------------------------

_COLUMNS = (
    ("shared_repeated_known_mistakes", "rep.mist"),
    ("isolated_repeated_known_mistakes", "iso.rep"),
    ("mistakes_reduction", "reduct"),
    ("shared_steps", "steps"),
    ("isolated_steps", "iso.steps"),
    ("steps_saved", "saved"),
    ("shared_first_attempt_success", "1st ok"),
    ("unproven_per_prompt", "unprov/pr"),
    ("imported_per_prompt", "impt/pr"),
    ("poisoned_plan_exposures", "pois.plan"),
    ("poisoned_decision_exposures", "pois.dec"),
    ("contested_checks", "contested"),
    ("poisoned_active_end", "pois.left"),
    ("liar_contradicted_imported", "liar.x.imp"),
    ("poison_contradicted", "pois.x"),
    ("imports_accepted", "imported"),
    ("refused_graylisted", "grayl.ref"),
)


def _tag(share: float) -> str:
    return f"{share:g}".replace(".", "")


def print_table(results: dict[float, dict[str, dict[str, float]]]) -> None:
    for arm in ("honest", "poisoners"):
        rows = [(s, r[arm]) for s, r in results.items() if arm in r]
        if not rows:
            continue
        print(f"\n{arm} (means over {rows[0][1]['runs']:.0f} seeds; share 1 = no caution)")
        print("share  " + "  ".join(f"{label:>9}" for _, label in _COLUMNS))
        for share, fig in rows:
            cells = "  ".join(f"{fig.get(k, float('nan')):>9.3g}" for k, _ in _COLUMNS)
            print(f"{share:<5g}  {cells}")


def summary(results: dict[float, dict[str, dict[str, float]]]) -> dict[str, float]:
    """Flat figures: each share's means and ratios to the share-1.0 baseline."""
    flat: dict[str, float] = {}
    base = results.get(BASELINE_SHARE, {})
    for share, arms in results.items():
        for arm, fig in arms.items():
            for key in (k for k, _ in _COLUMNS):
                if key in fig:
                    flat[f"share{_tag(share)}_{arm}_{key}"] = fig[key]
            if share == BASELINE_SHARE or arm not in base:
                continue
            b = base[arm]
            for key, name in (
                ("steps_saved", "steps_saved"),
                ("shared_repeated_known_mistakes", "repeated_mistakes"),
                ("unproven_per_prompt", "unproven_exposure"),
                ("poisoned_plan_exposures", "poisoned_plan_exposure"),
                ("poisoned_active_end", "poisoned_left"),
                ("liar_contradicted_imported", "liar_contradicted_imported"),
            ):
                if b.get(key):
                    flat[f"share{_tag(share)}_{arm}_{name}_ratio"] = round(fig[key] / b[key], 4)
    return flat


def main(argv: list[str] | None = None) -> int:
    """Entry point; progress on stderr, the tables, and last one JSON line of figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shares 1 and 0, a small run")
    parser.add_argument("--shares", type=float, nargs="+", default=None)
    parser.add_argument("--seeds", type=int, default=None, help="seeds per arm (at most 3)")
    parser.add_argument("--arms", nargs="+", choices=("honest", "poisoners"), default=None)
    parser.add_argument("--jsonl", type=Path, default=None, help="append each run's figures")
    args = parser.parse_args(argv)
    quick = args.quick
    shares = args.shares or ([1.0, 0.0] if quick else [1.0, 0.5, 0.25, 0.0])
    if any(not 0.0 <= s <= 1.0 for s in shares):
        parser.error("--shares: each share must lie in [0, 1]")
    seeds = max(1, min(3, args.seeds or (1 if quick else 3)))
    arms = args.arms or (["honest"] if quick else ["honest", "poisoners"])
    sizes = Sizes(nodes=3, agents=6, rounds=3) if quick else Sizes()
    started = time.monotonic()
    results = {s: run_share(s, arms, seeds, sizes, args.jsonl) for s in shares}
    print_table(results)
    figures = summary(results)
    figures["total_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
