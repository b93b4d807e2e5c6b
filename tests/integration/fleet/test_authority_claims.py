"""Authority claims pushed by admitted peers (each its own principal) into a real fleet with
some honest nodes' influence gate off: the claims the gate's topic detection was tuned on
reach no prompt or preamble of a gated honest node, and do reach the gate-off nodes' (so
the assertion could fail). The held-out claims are not pushed here: bench/authority.py
reports them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lamarck.fleet.attack_fleet import start_attack_fleet
from lamarck.fleet.authority import AuthorityParams, run_authority
from lamarck.fleet.supervisor import Fleet

# A fleet's start and the pushes' imports take minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

#: Port ranges of this module's fleet (the attack scenarios' 9500-9800).
PORTS = (9710, 9725)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    started = start_attack_fleet(Path(tmp_path_factory.mktemp("authority")), 5, 2, PORTS, print)
    try:
        yield started
    finally:
        started.stop(print)


def test_tuned_authority_claims_reach_no_gated_agent_and_do_reach_the_ungated(
    fleet: Fleet,
) -> None:
    report = run_authority(fleet, AuthorityParams(claims="tuning"), print, tag="-it")
    figures = report.figures()
    print(figures)
    assert figures["authority_pushes_accepted"] > 0
    # The claims are recalled for the tasks: the attack works where the gate is off.
    assert figures["gate_off_claims_reached"] > 0, figures
    assert figures["gate_on_claims_reached"] == 0, report.where
