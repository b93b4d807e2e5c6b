"""Screenshot every page of the operator console from a small fleet with some history.

Starts a fleet (``lamarck fleet up``: three nodes by default, one of them Byzantine so that
there are refusals, a low reputation and held records to look at), lets its workload run,
then opens one node's console in headless Chromium (Debian's ``/usr/bin/chromium`` driven by
Playwright; nothing is downloaded) and saves a PNG of each page into ``--out``
(``docs/console/`` by default), then stops the fleet it started. With ``--fleet-dir`` naming
a fleet that already runs, it uses that one and leaves it running.

    .venv/bin/python tools/console_screenshots.py                # fleet of 3, docs/console/
    .venv/bin/python tools/console_screenshots.py --nodes 4 --rounds 4 --out /tmp/shots

The console is reached with the node's operator token as a bearer (``<home>/operator.token``),
so the node's one-time login URL stays unused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright import async_api as playwright_api

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Printed by ``lamarck fleet up`` once its report is out and the fleet stays up.
READY_LINE = "the fleet keeps running"
REPO = Path(__file__).resolve().parents[1]


def _start_fleet(args: argparse.Namespace, fleet_dir: Path) -> subprocess.Popen[str]:
    """``lamarck fleet up`` in the background; returns once its workload has run."""
    command = [
        sys.executable,
        "-m",
        "lamarck.cli",
        "fleet",
        "up",
        "--nodes",
        str(args.nodes),
        "--byzantine",
        str(args.byzantine),
        "--agents",
        str(args.agents),
        "--rounds",
        str(args.rounds),
        "--seed",
        str(args.seed),
        "--dir",
        str(fleet_dir),
        "--base-port",
        str(args.base_port),
    ]
    print("starting:", " ".join(command[2:]), flush=True)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO
    )
    assert process.stdout is not None
    deadline = time.monotonic() + args.timeout_s
    for line in process.stdout:
        print("  fleet:", line.rstrip(), flush=True)
        if READY_LINE in line:
            return process
        if time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    raise SystemExit(f"the fleet did not come up (exit {process.returncode})")


def _stop_fleet(process: subprocess.Popen[str]) -> None:
    """Stop the fleet this script started (Ctrl-C, as its own output says)."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=180)
    except subprocess.TimeoutExpired:
        process.kill()


def _node_home(fleet_dir: Path, name: str) -> Path:
    """The home of the fleet's node ``name`` from its ``fleet.json``."""
    state = json.loads((fleet_dir / "fleet.json").read_text())
    for node in state["nodes"]:
        if node["name"] == name:
            return Path(node["home"])
    raise SystemExit(f"no node {name} in {fleet_dir}/fleet.json")


async def _links(page: Any, selector: str) -> list[str]:
    hrefs: list[str] = await page.locator(selector).evaluate_all(
        "as => as.map(a => a.getAttribute('href'))"
    )
    return hrefs


async def _shoot(url: str, token: str, out: Path, width: int) -> list[tuple[str, str]]:
    """Every page: the menu's pages, then one peer, one lesson (an imported one if any)."""
    taken: list[tuple[str, str]] = []
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(
                viewport={"width": width, "height": 900},
                extra_http_headers={"Authorization": f"Bearer {token}"},
            )
            page = await context.new_page()

            async def shot(name: str, path: str) -> None:
                response = await page.goto(url.rstrip("/") + path)
                if response is None or response.status != 200:
                    raise SystemExit(f"{path}: HTTP {response.status if response else '?'}")
                target = out / f"{name}.png"
                await page.screenshot(path=str(target), full_page=True)
                taken.append((name, path))
                print(f"  {path} -> {target} ({target.stat().st_size // 1024} KiB)", flush=True)

            for name, path in (
                ("overview", "/"),
                ("reputation", "/reputation"),
                ("quarantine", "/quarantine"),
                ("lessons", "/lessons"),
                ("health", "/health"),
            ):
                await shot(name, path)
            await page.goto(url.rstrip("/") + "/reputation")
            # The lowest score first: the peer an operator opens first.
            peers = await _links(page, "#reputation tbody a.peer")
            if peers:
                await shot("peer", peers[-1])
            await page.goto(url.rstrip("/") + "/lessons")
            imported = await _links(page, "#lessons tbody tr[data-origin='imported'] td a")
            local = await _links(page, "#lessons tbody tr[data-origin='local'] td a")
            lessons = [h for h in (*imported, *local) if h.startswith("/lessons/")]
            if lessons:
                await shot("lesson", lessons[0])
        finally:
            await browser.close()
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "console")
    parser.add_argument("--fleet-dir", type=Path, help="Use this running fleet.")
    parser.add_argument("--node", default="node1", help="Whose console (a fleet name).")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--byzantine", type=int, default=1)
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base-port", type=int, default=9600)
    parser.add_argument("--width", type=int, default=1280, help="Viewport width in pixels.")
    parser.add_argument("--timeout-s", type=float, default=900.0)
    args = parser.parse_args()
    process = None
    scratch = None
    fleet_dir = args.fleet_dir
    if fleet_dir is None:
        scratch = tempfile.TemporaryDirectory(prefix="lamarck-shots-")
        fleet_dir = Path(scratch.name) / "fleet"
        process = _start_fleet(args, fleet_dir)
    try:
        home = _node_home(fleet_dir, args.node)
        info = json.loads((home / "node.json").read_text())
        token = (home / "operator.token").read_text().strip()
        url = info.get("console_url") or ""
        if not url:
            raise SystemExit(f"{args.node} serves no console (console_listen is off)")
        print(f"console of {args.node}: {url}", flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        taken = asyncio.run(_shoot(url, token, args.out, args.width))
        print(f"{len(taken)} pages in {args.out}")
    finally:
        if process is not None:
            _stop_fleet(process)
        if scratch is not None:
            scratch.cleanup()


if __name__ == "__main__":
    main()
