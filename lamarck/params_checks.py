"""Field checks for frozen params objects: each names the field and the rule it breaks.

One set for the whole code base (the node's ``learning/params.py`` and the SDK's
``lamarck.agent`` params), so every ``ConfigError`` reads the same way: ``invalid <field>:
<rule>``, reason ``invalid_params``, ``field=<name>``. NaN and infinities are refused wherever a
number is checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from lamarck.errors import ConfigError

__all__ = [
    "check_finite",
    "check_int",
    "check_patterns",
    "check_positive_int",
    "check_range",
    "check_rule",
]


def check_rule(ok: bool, name: str, rule: str) -> None:
    """Raise ``ConfigError`` naming ``name`` and ``rule`` when ``ok`` is false."""
    if not ok:
        raise ConfigError(f"invalid {name}: {rule}", reason="invalid_params", field=name)


def check_finite(name: str, value: float) -> None:
    """Refuse NaN, infinities and non-numbers (bools included), naming the field."""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    check_rule(number, name, "must be a number")
    check_rule(math.isfinite(value), name, "must be finite")


def check_range(
    name: str, value: float, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False
) -> None:
    """A finite number in the interval from ``lo`` to ``hi`` (each end open or closed)."""
    check_finite(name, value)
    below = value <= lo if lo_open else value < lo
    above = value >= hi if hi_open else value > hi
    left = "(" if lo_open else "["
    right = ")" if hi_open else "]"
    check_rule(not (below or above), name, f"must be in {left}{lo}, {hi}{right}, got {value}")


def check_int(name: str, value: int, lo: int, hi: int | None = None) -> None:
    """An integer (not a bool) in ``[lo, hi]`` (``hi`` None: unbounded)."""
    ok = not isinstance(value, bool) and isinstance(value, int) and value >= lo
    if ok and hi is not None:
        ok = value <= hi
    bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
    check_rule(ok, name, f"must be an integer {bound}, got {value!r}")


def check_positive_int(name: str, value: int) -> None:
    """An integer count of at least one."""
    check_int(name, value, 1)


def check_patterns(name: str, patterns: Iterable[str]) -> None:
    """A non-empty collection of non-empty regular expressions that compile."""
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
