"""The fleet the attack scenarios run on (authority claims, quiet steering): each attacker
under a principal of its own, up to three honest principals (an honest lesson can be
corroborated), and every other honest node with the influence gate off, so one run measures
the gate against its absence over the same pushes. Started on a port range of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from lamarck.errors import ConfigError
from lamarck.fleet.supervisor import Fleet, FleetSpec

__all__ = ["attack_fleet_spec", "start_attack_fleet"]


def attack_fleet_spec(directory: Path, nodes: int, byzantine: int, base_port: int) -> FleetSpec:
    """The spec: the last ``byzantine`` nodes attack, each under its own operator; honest
    nodes 1, 3, 5... (0-based) run with the gate off."""
    if not 1 <= byzantine < nodes - 1:
        raise ConfigError(
            f"invalid byzantine={byzantine}: an attack fleet needs an attacker and two honest "
            f"nodes of {nodes}",
            field="byzantine",
        )
    honest = nodes - byzantine
    return FleetSpec(
        directory=directory,
        nodes=nodes,
        byzantine=byzantine,
        operators=byzantine + min(3, honest),
        own_principals=True,
        gate_off=tuple(i for i in range(honest) if i % 2 == 1),
        base_port=base_port,
    )


def start_attack_fleet(
    directory: Path,
    nodes: int,
    byzantine: int,
    base_ports: Sequence[int],
    say: Callable[[str], None] = lambda _: None,
) -> Fleet:
    """A started attack fleet on the first of ``base_ports`` whose range is free (a busy
    one, ``port_busy``, moves to the next); ``ConfigError`` when none is."""
    for k, base in enumerate(base_ports):
        fleet = Fleet(attack_fleet_spec(directory / f"try{k}", nodes, byzantine, base))
        try:
            fleet.up(say)
        except ConfigError as e:
            if e.reason != "port_busy":
                raise
            continue
        return fleet
    raise ConfigError(f"no free port range among {list(base_ports)}", reason="port_busy")
