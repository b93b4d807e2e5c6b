"""The node setting for its registry rounds (heartbeat and peer-list refresh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet.supervisor import FleetSpec
from lamarck.node.config import MAX_REGISTRY_HEARTBEAT_S, load_settings
from lamarck.node.params import node_params
from lamarck.registry.params import RegistryParams


def test_a_node_beats_every_10_s_by_default(tmp_path: Path) -> None:
    assert node_params(load_settings(home=tmp_path)).registry.heartbeat_interval_s == 10.0
    # The bound is half the lifetime of a registration.
    assert RegistryParams().heartbeat_ttl_s / 2 == MAX_REGISTRY_HEARTBEAT_S


@pytest.mark.parametrize("seconds", [0.5, 2.0, 15.0])
def test_the_setting_reaches_the_registry_rules(tmp_path: Path, seconds: float) -> None:
    params = node_params(load_settings(home=tmp_path, registry_heartbeat_s=seconds))
    assert params.registry.heartbeat_interval_s == seconds
    # Principals looked up are reused for half a round (the refresh after it re-reads them).
    assert params.registry.principal_view_s == seconds / 2


@pytest.mark.parametrize("bad", [-1.0, 10.5, float("nan")])
def test_a_principal_view_longer_than_a_round_is_refused(bad: float) -> None:
    with pytest.raises(ConfigError) as err:
        RegistryParams(principal_view_s=bad)
    assert err.value.details["field"] == "principal_view_s"


@pytest.mark.parametrize("bad", [0, -1.0, 15.5, "often"])
def test_a_round_longer_than_half_the_registration_lifetime_is_refused(
    tmp_path: Path, bad: object
) -> None:
    # Above 15 s one lost beat would let the 30 s registration lapse.
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, registry_heartbeat_s=bad)
    assert err.value.details["field"] == "registry_heartbeat_s"


def test_a_fleet_refuses_a_round_its_nodes_would_refuse(tmp_path: Path) -> None:
    assert FleetSpec(directory=tmp_path).registry_heartbeat_s == 2.0
    with pytest.raises(ConfigError) as err:
        FleetSpec(directory=tmp_path, registry_heartbeat_s=20.0)
    assert err.value.details["field"] == "registry_heartbeat_s"
