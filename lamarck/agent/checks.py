"""Field checks for the SDK's params objects: each names the field and the rule it breaks.

The node's params modules keep their own private copies; these serve ``lamarck.agent`` only,
so the SDK's params do not reach into the node's private helpers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from lamarck.errors import ConfigError

__all__ = ["check_int", "check_patterns", "check_range", "check_rule"]


def check_rule(ok: bool, name: str, rule: str) -> None:
    """Raise ``ConfigError`` naming ``name`` and ``rule`` when ``ok`` is false."""
    if not ok:
        raise ConfigError(f"invalid {name}: {rule}", reason="invalid_params", field=name)


def check_int(name: str, value: int, lo: int, hi: int | None = None) -> None:
    """An integer (not a bool) in ``[lo, hi]`` (``hi`` None: unbounded)."""
    ok = not isinstance(value, bool) and isinstance(value, int) and value >= lo
    if ok and hi is not None:
        ok = value <= hi
    bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
    check_rule(ok, name, f"must be an integer {bound}, got {value!r}")


def check_range(name: str, value: float, lo: float, hi: float, *, lo_open: bool = False) -> None:
    """A finite number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``); NaN and inf refused."""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    check_rule(number, name, f"must be a number, got {value!r}")
    check_rule(math.isfinite(value), name, "must be finite")
    below = value <= lo if lo_open else value < lo
    left = "(" if lo_open else "["
    check_rule(not below and value <= hi, name, f"must be in {left}{lo}, {hi}], got {value}")


def check_patterns(name: str, patterns: Iterable[str]) -> None:
    """A non-empty tuple of non-empty regular expressions that compile."""
    items = tuple(patterns)
    check_rule(len(items) > 0, name, "must hold at least one pattern")
    for p in items:
        check_rule(isinstance(p, str) and bool(p.strip()), name, "patterns must be non-empty")
        try:
            re.compile(p)
        except re.error as e:
            raise ConfigError(
                f"invalid {name}: {p!r} does not compile ({e})", reason="invalid_params", field=name
            ) from None
