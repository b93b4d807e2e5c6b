"""``lamarck fleet up|status|down``: a network of real nodes on this machine, learning live.

``up`` starts N admitted nodes (one registry, one PostgreSQL, see
``lamarck.fleet.supervisor``), runs a scripted agent workload against them through the
SDK with a live table of what each node learned, imported and refused, prints the report,
and keeps the fleet running until Ctrl-C (``--exit`` stops it after the report). ``status``
and ``down`` act on the fleet of ``--dir`` from another terminal.

``--workload`` names a driver workload (``lamarck.fleet.workloads``) or one of the
scenarios (``lamarck.fleet.scenarios``: ``blocker``, ``byzantine``,
``planted-control``, ``retrieval-poisoning``), which run at their full size unless
``--nodes``/``--byzantine`` say otherwise, three times on one fleet, and print every figure
with its mean and spread.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from lamarck.cli.output import emit_json
from lamarck.errors import CliError, ConfigError, LamarckError
from lamarck.fleet.driver import DriverParams, FleetDriver, NodeHandle, scrape_counts
from lamarck.fleet.launcher import LaunchParams
from lamarck.fleet.report import (
    EVIDENCE_CLASSES,
    NODE_ID_SHOWN,
    NODES_LEGEND,
    NodeCounts,
    evidence_delay_text,
    evidence_table,
    gate_figures,
    learning_figures,
    learning_table,
    learning_verdict,
    mean_and_spread,
    nodes_table,
    quorum_figures,
    quorum_table,
    reputation_rows,
    reputation_table,
    scenario_table,
)
from lamarck.fleet.scenarios import (
    SCENARIOS,
    ScenarioPlan,
    check_workload_name,
    plan_scenario,
    run_scenario,
    workload_names,
)
from lamarck.fleet.supervisor import (
    Fleet,
    FleetSpec,
    read_state,
    running_supervisor,
)
from lamarck.fleet.supervisor import (
    down as fleet_down,
)
from lamarck.fleet.workloads import Workload, WorkloadParams, make_workload
from lamarck.node.sharing.quorum import QUORUM_DIR, QuorumLedger
from lamarck.proto.labels import with_label

__all__ = ["DEFAULT_DIR", "app", "down", "register", "status", "up"]

#: Where a fleet lives unless ``--dir`` says otherwise.
DEFAULT_DIR = Path("~/.lamarck-fleet")

app = typer.Typer(
    name="fleet", help="Run a network of real nodes on this machine.", no_args_is_help=True
)

_DirOption = Annotated[
    Path,
    typer.Option("--dir", file_okay=False, help="The fleet directory (homes, logs, fleet.json)."),
]


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM (lamarck fleet down) takes the same clean path as Ctrl-C.
    raise KeyboardInterrupt


def _reputation_rows(
    addr: str, home: Path, names: Mapping[str, str]
) -> list[dict[str, object]] | None:
    """A node's reputation table through the operator SDK, on the operator token of its
    ``home`` (None when it serves none)."""
    from lamarck.operator import OperatorClient

    with OperatorClient(addr, home=home, timeout=10) as op:
        try:
            table = op.reputation()
        except LamarckError:
            return None
    return reputation_rows(table.rows, names)


#: Sizes of the driver workloads when the command line gives none (scenarios have their own).
_NODES = 5
_AGENTS = 10
_ROUNDS = 6


@app.command()
def up(
    nodes: Annotated[
        int | None,
        typer.Option(
            "--nodes",
            min=1,
            max=100,
            help=f"Node processes (default {_NODES}; a scenario: its own full size).",
        ),
    ] = None,
    byzantine: Annotated[
        int | None,
        typer.Option(
            "--byzantine",
            min=0,
            help="Nodes whose agents fabricate outcomes (in a scenario: that attack) "
            "(default 0; a scenario: its own share).",
        ),
    ] = None,
    operators: Annotated[
        int,
        typer.Option(
            "--operators",
            min=1,
            help="Operators (principals) the nodes are admitted under: each endorses its "
            "share round-robin, the Byzantine nodes under their own (default 1: one operator, "
            "its identities are the voters).",
        ),
    ] = 1,
    workload: Annotated[
        str, typer.Option("--workload", help=f"One of: {', '.join(workload_names())}.")
    ] = "pitfalls",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the workload.")] = 0,
    agents: Annotated[
        int | None,
        typer.Option(
            "--agents", min=1, help=f"Scripted agents (default {_AGENTS}; not for scenarios)."
        ),
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds", min=1, help=f"Rounds of tasks (default {_ROUNDS}; not for scenarios)."
        ),
    ] = None,
    embedder: Annotated[
        str, typer.Option("--embedder", metavar="hashing|minilm", help="The nodes' embedder.")
    ] = "hashing",
    database_url: Annotated[
        str, typer.Option("--database-url", metavar="DSN", help="A PostgreSQL to use.")
    ] = "",
    redis_url: Annotated[
        str, typer.Option("--redis-url", metavar="URL", help="A Redis to use as registry.")
    ] = "",
    directory: _DirOption = DEFAULT_DIR,
    base_port: Annotated[
        int, typer.Option("--base-port", help="Node I listens on base+3(I-1) .. +2.")
    ] = 7800,
    exit_after: Annotated[
        bool, typer.Option("--exit", help="Stop the fleet after the report.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the figures as one JSON line at the end.")
    ] = False,
    unverified_plan_share: Annotated[
        float | None,
        typer.Option(
            "--unverified-plan-share",
            min=0.0,
            max=1.0,
            help="Every node's share of plan-time prompts an unverified lesson enters as a "
            "hint (default: the node's own).",
        ),
    ] = None,
) -> None:
    """Start a fleet, run a workload with live progress, print the report; Ctrl-C stops it."""
    console = Console(stderr=as_json)
    # Everything is checked before a process starts: a bad name or size costs no start-up.
    check_workload_name(workload)
    plan: ScenarioPlan | None = None
    work: Workload | None = None
    if workload in SCENARIOS:
        if agents is not None or rounds is not None:
            raise ConfigError(
                f"--agents and --rounds size the driver workloads; the {workload} scenario "
                "has its own sizes (--nodes, --byzantine)",
                reason="conflicting_options",
            )
        plan = plan_scenario(workload, nodes, byzantine)
        nodes, byzantine = plan.nodes, plan.byzantine
    else:
        nodes = _NODES if nodes is None else nodes
        byzantine = 0 if byzantine is None else byzantine
    liars = _liars_fleet(workload, nodes, byzantine, operators)
    spec = FleetSpec(
        directory=directory,
        nodes=nodes,
        byzantine=byzantine,
        operators=liars.pop("operators", operators),
        embedder=embedder,
        database_url=database_url,
        redis_url=redis_url,
        base_port=base_port,
        declared_tools=plan.scenario.declared_tools if plan is not None else (),
        unverified_plan_share=unverified_plan_share,
        **liars,
    )
    if plan is None:
        byz_nodes = tuple(i for i in range(nodes) if spec.is_byzantine(i))
        work = make_workload(
            workload,
            seed,
            WorkloadParams(
                nodes=nodes,
                agents=_AGENTS if agents is None else agents,
                rounds=_ROUNDS if rounds is None else rounds,
                byzantine_nodes=byz_nodes,
            ),
        )
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    # Ctrl-C stops the fleet even when a parent started it with SIGINT ignored (nohup, a
    # test runner's worker): a Python process keeps an inherited SIG_IGN.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    fleet = Fleet(spec)
    t0 = time.monotonic()
    figures: dict[str, float] = {}
    try:
        fleet.up(lambda m: console.print(f"[dim]{m}[/dim]"))
        if plan is not None:
            figures = _run_scenario(console, fleet, plan, seed)
        else:
            assert work is not None
            figures = _run_workload(console, fleet, work, seed)
        # Whole-fleet totals from every ledger at the end, not per-run figures: named fleet_*.
        figures.update({f"fleet_{k}": v for k, v in _show_quorums(console, fleet).items()})
        figures["fleet_nodes"] = float(nodes)
        figures["fleet_byzantine"] = float(byzantine)
        figures["fleet_operators"] = float(spec.operators)
        figures["fleet_total_s"] = round(time.monotonic() - t0, 1)
        console.print(f"fleet run end to end in {figures['fleet_total_s']:.0f} s")
        _point_your_agent(console, fleet)
        if as_json:
            print(json.dumps(figures), flush=True)
        if not exit_after:
            console.print("[bold]the fleet keeps running; Ctrl-C (or lamarck fleet down) stops it")
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        console.print("stopping the fleet ...")
    finally:
        fleet.stop(lambda m: console.print(m))
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        console.print(f"fleet stopped; its homes and logs stay in {fleet.dir}")


def _liars_fleet(workload: str, nodes: int, byzantine: int, operators: int) -> dict[str, Any]:
    """The plausible-liars fleet (and the attack scenarios'): each liar under its own
    operator, three honest operators (an honest lesson can be corroborated), and every other
    honest node with the influence gate off (the gate measured against its absence in the
    same run)."""
    if workload not in ("plausible-liars", "authority-claims", "quiet-steering"):
        return {}
    honest = nodes - byzantine
    return {
        "own_principals": True,
        "operators": max(operators, byzantine + min(3, honest)),
        "gate_off": tuple(i for i in range(honest) if i % 2 == 1),
    }


@contextlib.contextmanager
def _live(console: Console, renderable: Group) -> Iterator[Live]:
    """A live display that leaves the next output on a line of its own."""
    try:
        with Live(renderable, console=console, refresh_per_second=4) as live:
            yield live
    finally:
        # On a pipe or file the last frame ends without a newline: the next table joined it.
        if not console.is_terminal:
            console.line()


def _run_workload(console: Console, fleet: Fleet, work: Any, seed: int) -> dict[str, float]:
    handles = [
        NodeHandle(
            n.name,
            n.agent_addr,
            n.metrics_url,
            byzantine=fleet.spec.is_byzantine(i),
            home=n.home,
            node_id=n.node_id,
            influence_gate=i not in fleet.spec.gate_off,
        )
        for i, n in enumerate(fleet.nodes)
    ]
    roles = [
        "byzantine" if h.byzantine else "honest, gate off" if i in fleet.spec.gate_off else "honest"
        for i, h in enumerate(handles)
    ]
    # Each node by its fleet label beside the start of its id (a label is a claim, not an id).
    names = [with_label(h.node_id, h.name, width=NODE_ID_SHOWN) for h in handles]
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    task = progress.add_task(f"workload {work.name}: rounds", total=work.rounds)
    params = DriverParams(gossip_interval_s=fleet.spec.gossip_interval_s, track_evidence=True)
    with FleetDriver(handles, work, params, random.Random(seed)) as driver:
        counts: list[NodeCounts | None] = driver.counts()

        def view() -> Group:
            return Group(
                progress,
                nodes_table(names, roles, counts, driver.learned),
                Text(NODES_LEGEND, style="dim"),
            )

        with _live(console, view()) as live:

            def on_round(r: int) -> None:
                nonlocal counts
                counts = driver.counts()
                progress.advance(task)
                live.update(view())

            records = driver.run(on_round)
            # The live table's last frame is the final one: one table, never two.
            counts = driver.counts()
            live.update(view())
        figures = learning_figures(records)
        classes = driver.evidence_classes()
        console.print(evidence_table(names, roles, classes, driver.poisoned_by_node()))
        honest = [c for role, c in zip(roles, classes, strict=True) if role != "byzantine" and c]
        for k in EVIDENCE_CLASSES:
            figures[f"honest_lessons_{k}"] = float(sum(c.get(k, 0) for c in honest))
        if fleet.spec.gate_off:
            figures.update(gate_figures(records, fleet.spec.gate_off))
        delays = driver.evidence_delays()
        figures.update(delays)
        console.print(evidence_delay_text(delays))
    _show_reputation(console, fleet)
    console.print(learning_table(figures))
    verdict = learning_verdict(figures, byzantine=fleet.spec.byzantine)
    if verdict:
        console.print(Text(verdict), justify="left")
    return figures


def _show_quorums(console: Console, fleet: Fleet) -> dict[str, float]:
    """How the quorums on held high-stakes records ended, from every node's ledger."""
    entries: list[tuple[str, str]] = []
    for node in fleet.nodes:
        ledger = QuorumLedger(node.home / QUORUM_DIR)
        ledger.load()
        entries += [(e.state, e.reason) for e in ledger.entries()]
    figures = quorum_figures(entries)
    console.print(quorum_table(figures))
    return figures


def _show_reputation(console: Console, fleet: Fleet) -> None:
    """The reputation table as the first honest node sees its peers."""
    names = {n.node_id: n.name for n in fleet.nodes}
    for i, node in enumerate(fleet.nodes):
        if fleet.spec.is_byzantine(i):
            continue
        rows = _reputation_rows(node.agent_addr, node.home, names)
        if rows is None:
            console.print("[dim]reputation: this node version serves no reputation table[/dim]")
            return
        console.print(reputation_table(rows, f"reputation as {node.name} sees its peers"))
        return


def _run_scenario(
    console: Console, fleet: Fleet, plan: ScenarioPlan, seed: int
) -> dict[str, float]:
    """Run a scenario's repetitions with a progress bar and the live per-node table; print
    every run's figures, their mean and spread; return the mean and spread figures."""
    names = [with_label(n.node_id, n.name, width=NODE_ID_SHOWN) for n in fleet.nodes]
    roles = ["byzantine" if fleet.spec.is_byzantine(i) else "honest" for i in range(len(names))]
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    task = progress.add_task(f"scenario {plan.scenario.name}: runs", total=plan.repeats)

    def counts() -> list[NodeCounts | None]:
        return [scrape_counts(n.metrics_url) for n in fleet.nodes]

    live_counts = counts()

    def view() -> Group:
        return Group(
            progress,
            nodes_table(names, roles, live_counts, None),
            Text(NODES_LEGEND, style="dim"),
        )

    with _live(console, view()) as live:

        def say(message: str) -> None:
            # Each step of a scenario is a moment to refresh what the nodes hold.
            nonlocal live_counts
            console.print(f"[dim]{message}[/dim]")
            live_counts = counts()
            live.update(view())

        def on_run(k: int, figures: Mapping[str, float]) -> None:
            progress.advance(task)
            say(f"run {k + 1} done")

        runs = run_scenario(fleet, plan, seed, say, on_run)
        # The live table's last frame is the final one: one table, never two.
        live_counts = counts()
        live.update(view())
    _show_reputation(console, fleet)
    summary = mean_and_spread(runs)
    scenario = plan.scenario
    met = scenario.met({k: v for k, v in summary.items() if not k.endswith("_spread")})
    console.print(scenario_table(scenario.name, runs, scenario.goal, met))
    summary["scenario_runs"] = float(len(runs))
    summary["scenario_goal_met"] = float(met)
    return summary


def _point_your_agent(console: Console, fleet: Fleet) -> None:
    first = fleet.nodes[0]
    console.print(
        f"point your agent at {first.name}: agent API {first.agent_addr} "
        f"(lamarck --home {first.home} lessons list; MCP: see examples/mcp)"
    )


def _status_rows(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for node in state.get("nodes", []):
        counts = scrape_counts(str(node.get("metrics_url", "")), timeout_s=2)
        rows.append(
            {
                "node": node.get("name"),
                "role": "byzantine" if node.get("byzantine") else "honest",
                "pid": node.get("pid"),
                "node_id": node.get("node_id"),
                "agent_listen": node.get("agent_listen"),
                "up": counts is not None,
                "active_lessons": None if counts is None else counts.lessons.get("active", 0),
                "imported": None if counts is None else counts.imported,
            }
        )
    return rows


@app.command()
def status(
    directory: _DirOption = DEFAULT_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the fleet of --dir: supervisor, nodes, ports, lessons; exits 1 if it is not running."""
    where = directory.expanduser().resolve()
    state = read_state(where)
    if state is None:
        raise CliError(f"no fleet in {where}", reason="no_fleet")
    pid = running_supervisor(state)
    rows = _status_rows(state) if pid is not None else []
    facts = {
        "dir": str(where),
        "state": state.get("state") if pid else "stopped",
        "supervisor_pid": pid,
        "nodes": rows,
    }
    if as_json:
        emit_json(facts)
    else:
        console = Console()
        running = f" (supervisor pid {pid})" if pid is not None else ""
        console.print(f"fleet in {where}: {facts['state']}{running}")
        if rows:
            from rich.table import Table

            table = Table()
            for col in rows[0]:
                table.add_column(col)
            for row in rows:
                table.add_row(*(str(v) for v in row.values()))
            console.print(table)
    if pid is None:
        raise CliError(f"the fleet in {where} is not running", reason="fleet_not_running")


@app.command()
def down(directory: _DirOption = DEFAULT_DIR) -> None:
    """Stop the fleet of --dir and everything it started (nodes, registry, PostgreSQL)."""
    stopped = fleet_down(directory, LaunchParams())
    typer.echo("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))


def register(root: typer.Typer) -> None:
    """Add the ``fleet`` group to the root app."""
    root.add_typer(app)
