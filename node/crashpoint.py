"""Named crash points for kill -9 tests of multi-row writes.

A test starts a real node with ``LAMARCK_TEST_CRASH_AT=<label>``; when the node reaches
``crash_point(<label>)`` it kills itself with SIGKILL, exactly as a power cut would, between
two writes of one unit of work. The test then restarts the node and checks that the unit left
nothing half-applied. Without the variable (every production node) a crash point is one
dictionary lookup.
"""

from __future__ import annotations

import os
import signal

__all__ = ["CRASH_AT_ENV", "crash_point"]

#: The environment variable naming the crash point to die at.
CRASH_AT_ENV = "LAMARCK_TEST_CRASH_AT"


def crash_point(label: str) -> None:
    """Die here with SIGKILL when ``LAMARCK_TEST_CRASH_AT`` names ``label``."""
    if os.environ.get(CRASH_AT_ENV) == label:
        os.kill(os.getpid(), signal.SIGKILL)
