"""Per-peer reputation series are exported only when the operator asks
(``metrics_peer_scores``): by default a scraper sees band counts, never whom a node trusts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from lamarck.node import metrics

PEERS = [("lmk1alpha", 0.2, "graylisted", 0.1), ("lmk1bravo", 0.8, "trusted", 0.4)]


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    metrics.export_peer_scores(False)
    metrics.apply_reputation([])


def _score(peer: str) -> float | None:
    return REGISTRY.get_sample_value("lamarck_peer_reputation_score", {"peer": peer})


def test_per_peer_scores_are_off_by_default_and_band_counts_stay() -> None:
    metrics.apply_reputation(PEERS)
    assert _score("lmk1alpha") is None and _score("lmk1bravo") is None
    assert REGISTRY.get_sample_value("lamarck_peers_by_band", {"band": "trusted"}) == 1


def test_per_peer_scores_are_exported_when_asked() -> None:
    metrics.export_peer_scores(True)
    metrics.apply_reputation(PEERS)
    assert _score("lmk1alpha") == 0.2 and _score("lmk1bravo") == 0.8
