"""The console of a real node process, over plain HTTP (no browser).

A node is started as an operator would start it (``python -m lamarck.node.daemon``, embedded
Postgres, the console on its default loopback address with a free port); it learns a lesson
from an outcome an agent records through the SDK. The console's URL and its one-time login URL
are read from the node's own ``node.json`` (``console_url``, ``console_login_url``); the
operator signs in once and its pages are fetched with ``urllib`` in that session: the overview
names this node and its admission, the health page draws its report and the
imports-and-rejections plot from what the node stored, the lesson's page its history.
``lamarck node status`` prints the console's and the metrics' URLs.
"""

from __future__ import annotations

import http.client
import http.cookiejar
import importlib.util
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.client import Client
from lamarck.proto.clock import SystemClock
from tests.factories import outcome_obj

pytestmark = pytest.mark.integration

# The daemon's real-process fixture lives in the node tests' conftest; it is loaded by path
# (test directories are not packages) rather than copied.
_FIXTURE_FILE = Path(__file__).resolve().parents[1] / "node" / "conftest.py"
#: Bound on one page fetch (a page reads the store; the health page computes the report).
FETCH_TIMEOUT_S = 30.0
PROJECT = "d4" * 32


def _node_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lamarck_console_node_fixture", _FIXTURE_FILE)
    if spec is None or spec.loader is None:
        raise AssertionError(f"the node process fixture is missing: {_FIXTURE_FILE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


fixtures = _node_fixtures()
# The developer's LAMARCK_* settings must not reach the command under test.
runner = CliRunner(env={k: None for k in os.environ if k.startswith("LAMARCK_")})


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A running node with its console on the default address (127.0.0.1, a free port)."""
    running = fixtures.start_node(tmp_path_factory.mktemp("console-node"))
    try:
        yield running
    finally:
        running.stop()


def _outcome(tag: str) -> dict[str, Any]:
    """A run where one command failed and another then worked on the same target."""
    return outcome_obj(
        outcome_id=str(uuid.uuid4()),
        session_id=f"console-{tag}",
        turn_index=1,
        project=PROJECT,
        goal_digest="make the test suite pass",
        steps=[
            (f"shell:make check-{tag}", "failed", "the suite"),
            (f"shell:pytest -q {tag}", "ok", "the suite"),
        ],
        created_at=SystemClock().now(),
    )


@pytest.fixture(scope="module")
def learned(node: Any) -> str:
    """The id of a lesson the node learned from an outcome recorded through the SDK."""
    with Client(node.agent_addr) as client:
        result = client.record_outcome(_outcome(uuid.uuid4().hex[:8]))
    [lesson_id] = result.ids("created")
    return str(lesson_id)


@pytest.fixture(scope="module")
def session(node: Any) -> urllib.request.OpenerDirector:
    """A browser-like opener signed in by the node's one-time login URL (cookie kept)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(node.info["console_login_url"], timeout=FETCH_TIMEOUT_S) as reply:
        assert reply.status == 200 and "<h1>Overview</h1>" in reply.read().decode()
    [cookie] = list(jar)
    assert cookie.has_nonstandard_attr("HttpOnly")
    return opener


def fetch(
    opener: urllib.request.OpenerDirector, url: str, **headers: str
) -> tuple[int, dict[str, str], str]:
    """GET ``url``: status, headers and the body as text (an HTTP error is an answer too)."""
    request = urllib.request.Request(url, headers=headers)
    try:
        with opener.open(request, timeout=FETCH_TIMEOUT_S) as reply:
            return reply.status, dict(reply.headers), reply.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode("utf-8")


def raw_get(url: str, **headers: str) -> tuple[int, dict[str, str]]:
    """GET ``url`` without a session and without following redirects."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.netloc, timeout=FETCH_TIMEOUT_S)
    try:
        conn.request(
            "GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers
        )
        reply = conn.getresponse()
        return reply.status, dict(reply.getheaders())
    finally:
        conn.close()


def test_node_json_names_the_console_on_loopback(node: Any) -> None:
    url = node.info["console_url"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), url
    assert node.info["console_login_url"].startswith(url + "login?code=")
    assert node.info["metrics_url"].startswith("http://127.0.0.1:")
    # node.json holds a credential (the login URL): only the node's user reads it.
    assert (node.home / "node.json").stat().st_mode & 0o077 == 0
    assert (node.home / "operator.token").stat().st_mode & 0o077 == 0


def test_the_console_refuses_every_page_without_a_login(node: Any) -> None:
    for page in ("", "health", "quarantine", "lessons", "reputation"):
        status, headers = raw_get(node.info["console_url"] + page)
        assert (status, headers.get("Location")) == (303, "/login"), page


def test_the_one_time_login_url_is_good_once(node: Any, session: Any) -> None:
    status, headers = raw_get(node.info["console_login_url"])
    assert status == 401 and "Set-Cookie" not in headers


def test_the_overview_names_this_node_and_its_admission(
    node: Any, session: Any, learned: str
) -> None:
    status, headers, body = fetch(session, node.info["console_url"])
    assert status == 200
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert "<h1>Overview</h1>" in body
    assert node.node_id in body
    # The admission row says where the node stands with its registry, whatever that is.
    assert re.search(r'<th scope="row">admission</th><td>\w+', body)
    assert "0 pending" in body  # nothing quarantined on a fresh node


def test_the_health_page_draws_the_report_of_what_the_node_stored(
    node: Any, session: Any, learned: str
) -> None:
    status, _, body = fetch(session, node.info["console_url"] + "health")
    assert status == 200 and "<h1>Health</h1>" in body
    distribution = body[body.index('id="distribution"') : body.index('id="calibration"')]
    bands = [float(v) for v in re.findall(r'class="bar" data-value="([\d.]+)"', distribution)]
    assert sum(bands) >= 1  # the lesson just learned is counted in a confidence band
    activity = body[body.index('id="activity"') :]
    assert 'class="chart timeline"' in activity
    # A fresh node imported and refused nothing: its bins (sized by the node's age: minutes
    # for a node this young) are empty and drawn all the same.
    summary = re.search(r"0 imported, 0 rejected in (\d+) bins of 1 min", activity)
    assert summary is not None
    bins = int(summary.group(1))
    assert len(re.findall(r'class="imported" data-value="0"', activity)) == bins > 0


def test_a_learned_lessons_page_shows_its_history(node: Any, session: Any, learned: str) -> None:
    status, _, body = fetch(session, node.info["console_url"] + f"lessons/{learned}")
    assert status == 200
    assert 'id="history"' in body and "<td>created</td>" in body
    assert "learned here" in body  # not imported: no provenance


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.nip.io"])
def test_a_foreign_host_name_is_refused(node: Any, session: Any, host: str) -> None:
    status, _, _ = fetch(session, node.info["console_url"], Host=host)
    assert status == 403


def test_node_status_prints_the_console_and_metrics_urls(node: Any) -> None:
    result = runner.invoke(app, ["node", "status", "--home", str(node.home), "--json"])
    assert result.exit_code == 0, result.output
    assert f'"console_url": "{node.info["console_url"]}"' in result.output
    assert f'"metrics_url": "{node.info["metrics_url"]}"' in result.output
    table = runner.invoke(app, ["node", "status", "--home", str(node.home)], terminal_width=200)
    assert table.exit_code == 0, table.output
    assert node.info["console_url"] in table.output
    assert node.info["metrics_url"] in table.output
