"""The trust bench's quorum round runs over real gRPC on loopback and ends in a decision."""

from __future__ import annotations

import sys
from pathlib import Path

# `bench` is a directory at the repository root, importable from there (not installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.quorum_round import GrpcQuorumRunner


def test_one_quorum_round_of_four_voters_is_accepted_and_timed() -> None:
    runner = GrpcQuorumRunner()
    try:
        # The runner raises unless the round ends accepted with its certificate.
        seconds = runner(4)
    finally:
        runner.close()
    assert 0.0 < seconds < 60.0
