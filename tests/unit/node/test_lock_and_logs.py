"""One node per home, and JSON logs that keep structured fields."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.node.lock import HomeLock
from lamarck.node.logs import JsonFormatter


def test_second_lock_on_same_home_is_refused_with_pid(tmp_path: Path) -> None:
    with HomeLock(tmp_path):
        with pytest.raises(ConfigError) as err:
            HomeLock(tmp_path).acquire()
        assert err.value.reason == "already_running"
        assert err.value.details["pid"] == str(os.getpid())
    # Released: a new node may start.
    with HomeLock(tmp_path):
        pass


def test_lock_of_a_killed_process_is_free(tmp_path: Path) -> None:
    code = (
        "import sys, os; from pathlib import Path; from lamarck.node.lock import HomeLock; "
        f"HomeLock(Path({str(tmp_path)!r})).acquire(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with HomeLock(tmp_path):
        pass


def test_json_formatter_keeps_extra_fields() -> None:
    record = logging.makeLogRecord(
        {
            "name": "lamarck.x",
            "levelname": "INFO",
            "msg": "imported %s",
            "args": ("a",),
            "reason": "replay",
        }
    )
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "imported a"
    assert line["reason"] == "replay"
    assert line["level"] == "INFO"
