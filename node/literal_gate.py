"""Regular expressions that skip texts they cannot match, by the literals every match holds.

The autonomy grammar runs about eighty patterns over every sentence with a cue word, and one
alternation of a hundred cue words over every sentence of every record a node imports:
Python's ``re`` tries each alternative at each position, about 60 us for a sentence with no cue
word at all and 270 us of patterns for one with a cue (``bench/catchup.py``'s lessons), the
largest part of the import's filter stage. Most patterns can only match a text that contains
one of a few words ("approved", "granted", ... for a consent claim), and a text without any of
them is answered at once, as a regex engine's literal prefilter does (RE2's, Hyperscan's).

``required_literals`` reads a compiled pattern's syntax tree (``re._parser``, the parser the
``re`` module compiles from) for a set of strings such that every match contains at least one
of them; ``GatedPattern`` asks ``str.__contains__`` for them before the regex runs. Only a
necessary condition is checked, so a gated pattern finds exactly what the pattern finds (the
test suite compares both over the autonomy corpus and the lesson corpus). The check compares
lower-cased text, so it holds for ``re.IGNORECASE`` patterns on ASCII text; a text with any
other character runs the pattern unchecked (Unicode case folding maps a few non-ASCII letters
onto ASCII ones: U+017F LATIN SMALL LETTER LONG S matches ``s``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["GatedPattern", "required_literals"]

# The parser ``re`` compiles from (Python 3.11-3.13: ``re._parser``, ``re._constants``): a
# private module, so a Python without it gets no gates (every pattern runs; same matches).
_c: Any
_p: Any
try:
    from re import _constants as _c  # type: ignore[attr-defined,no-redef]
    from re import _parser as _p  # type: ignore[attr-defined,no-redef]
except ImportError:  # pragma: no cover - no such Python yet
    _c = _p = None

#: Repeats: (min, max, item). A repeat of at least one holds its item's literals.
_REPEATS: frozenset[Any] = frozenset()
if _c is not None:
    _REPEATS = frozenset({_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT})

# A candidate: strings one of which every match holds (lower-cased), or None.
_Needed = frozenset[str] | None


def _better(a: _Needed, b: _Needed) -> _Needed:
    """The more selective of two candidates: the longer shortest string, then fewer strings."""
    if a is None:
        return b
    if b is None:
        return a
    key_a = (min(map(len, a)), -len(a))
    key_b = (min(map(len, b)), -len(b))
    return a if key_a >= key_b else b


def _needed(items: Any) -> _Needed:
    """The best candidate of a parsed sequence (``SubPattern`` or list of (op, arg))."""
    best: _Needed = None
    run: list[str] = []

    def end_run() -> None:
        nonlocal best
        if run:
            best = _better(best, frozenset({"".join(run).lower()}))
            run.clear()

    for op, arg in items:
        if op is _c.LITERAL:
            run.append(chr(arg))
            continue
        end_run()
        found: _Needed = None
        if op is _c.SUBPATTERN:
            found = _needed(arg[-1])
        elif op is _c.BRANCH:
            found = _union([_needed(branch) for branch in arg[1]])
        elif op in _REPEATS:
            low, _, item = arg
            found = _needed(item) if low >= 1 else None
        elif op is _c.ATOMIC_GROUP:
            found = _needed(arg)
        elif op is _c.IN and arg and all(kind is _c.LITERAL for kind, _ in arg):
            found = frozenset(chr(code).lower() for _, code in arg)
        # Anything else (a class, a category, any character, an anchor, a look-around, a
        # back-reference) names no literal that a match must hold.
        best = _better(best, found)
    end_run()
    return best


def _union(options: list[_Needed]) -> _Needed:
    """Every alternative must hold one: the union, or None if one holds none."""
    out: set[str] = set()
    for option in options:
        if option is None:
            return None
        out |= option
    return frozenset(out)


def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Lower-cased strings one of which every match of ``pattern`` contains (shortest
    first), or None when no such set was found (a class, a look-around or an empty
    alternative everywhere)."""
    if _p is None or pattern.flags & re.LOCALE or isinstance(pattern.pattern, bytes):
        return None
    try:
        tree = _p.parse(pattern.pattern, pattern.flags)
    except re.error:  # pragma: no cover - it compiled, so it parses
        return None
    found = _needed(tree)
    # A literal still non-ASCII once lower-cased may match an ASCII letter under IGNORECASE
    # (U+017F LATIN SMALL LETTER LONG S matches "s"), which the lower-cased text would not
    # show: no gate then.
    if found is None or "" in found or not all(s.isascii() for s in found):
        return None
    return tuple(sorted(found, key=lambda s: (len(s), s)))


class GatedPattern:
    """A compiled pattern whose ``search`` and ``finditer`` first check ``required_literals``
    on ASCII text; everything else, and any other text, goes to the pattern itself."""

    __slots__ = ("_gate", "_re", "pattern")

    def __init__(self, compiled: re.Pattern[str]) -> None:
        """Wrap ``compiled``; its literals are found once, here."""
        self._re = compiled
        self._gate = required_literals(compiled)
        #: The pattern's source (as ``re.Pattern.pattern``).
        self.pattern: str = compiled.pattern

    @property
    def compiled(self) -> re.Pattern[str]:
        """The pattern itself."""
        return self._re

    @property
    def literals(self) -> tuple[str, ...] | None:
        """The strings one of which every match holds (None: no gate)."""
        return self._gate

    def _may_match(self, text: str) -> bool:
        gate = self._gate
        if gate is None or not text.isascii():
            return True
        lowered = text.lower()
        return any(s in lowered for s in gate)

    def search(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.search`` over the whole text."""
        return self._re.search(text) if self._may_match(text) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """``re.Pattern.finditer`` over the whole text."""
        return self._re.finditer(text) if self._may_match(text) else iter(())

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """``re.Pattern.match`` (not gated)."""
        return self._re.match(text, pos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        """``re.Pattern.sub`` (not gated)."""
        return self._re.sub(repl, text)

    def __repr__(self) -> str:
        return f"GatedPattern({self.pattern[:60]!r}, literals={self._gate!r})"
