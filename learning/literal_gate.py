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
test suite compares both over the autonomy corpus and the lesson corpus).

A case-sensitive pattern (the autonomy grammar's: it reads lower-cased text) keeps its literals
as written and looks for them in the text as given, any text. A ``re.IGNORECASE`` pattern's
literals are lower-cased and looked for in the lower-cased text, so that check holds on ASCII
text only; a text with any other character runs the pattern unchecked (Unicode case folding
maps a few non-ASCII letters onto ASCII ones: U+017F LATIN SMALL LETTER LONG S matches ``s``).
A group that turns case folding on or off inside a pattern (``(?i:...)``, ``(?-i:...)``) has
its literals compared the way that group matches them (the secret scan's rules are such groups).
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

#: A literal: its text and whether it is compared case-folded (lower-cased, in the
#: lower-cased text) or as written.
_Literal = tuple[str, bool]
# A candidate: literals one of which every match holds, or None.
_Needed = frozenset[_Literal] | None


def _better(a: _Needed, b: _Needed) -> _Needed:
    """The more selective of two candidates: the longer shortest string, then fewer strings."""
    if a is None:
        return b
    if b is None:
        return a
    key_a = (min(len(t) for t, _ in a), -len(a))
    key_b = (min(len(t) for t, _ in b), -len(b))
    return a if key_a >= key_b else b


def _needed(items: Any, fold: bool) -> _Needed:
    """The best candidate of a parsed sequence (``SubPattern`` or list of (op, arg));
    ``fold``: case is ignored here (the literals are lower-cased)."""
    best: _Needed = None
    run: list[str] = []

    def literal(text: str) -> _Literal:
        return (text.lower(), True) if fold else (text, False)

    def end_run() -> None:
        nonlocal best
        if run:
            best = _better(best, frozenset({literal("".join(run))}))
            run.clear()

    for op, arg in items:
        if op is _c.LITERAL:
            run.append(chr(arg))
            continue
        end_run()
        found: _Needed = None
        if op is _c.SUBPATTERN:
            # A scoped flag group, (?i:...) or (?-i:...), turns folding on or off inside it.
            _, add_flags, del_flags, body = arg
            inner = (fold or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
            found = _needed(body, inner)
        elif op is _c.BRANCH:
            found = _union([_needed(branch, fold) for branch in arg[1]])
        elif op in _REPEATS:
            low, _, item = arg
            found = _needed(item, fold) if low >= 1 else None
        elif op is _c.ATOMIC_GROUP:
            found = _needed(arg, fold)
        elif op is _c.IN and arg and all(kind is _c.LITERAL for kind, _ in arg):
            found = frozenset(literal(chr(code)) for _, code in arg)
        # Anything else (a class, a category, any character, an anchor, a look-around, a
        # back-reference) names no literal that a match must hold.
        best = _better(best, found)
    end_run()
    return best


def _union(options: list[_Needed]) -> _Needed:
    """Every alternative must hold one: the union, or None if one holds none."""
    out: set[_Literal] = set()
    for option in options:
        if option is None:
            return None
        out |= option
    return frozenset(out)


def _literals(pattern: re.Pattern[str]) -> tuple[_Literal, ...] | None:
    """``required_literals`` with each literal's comparison (shortest first)."""
    if _p is None or pattern.flags & re.LOCALE or isinstance(pattern.pattern, bytes):
        return None
    try:
        tree = _p.parse(pattern.pattern, pattern.flags)
    except re.error:  # pragma: no cover - it compiled, so it parses
        return None
    found = _needed(tree, bool(pattern.flags & re.IGNORECASE))
    if found is None or any(not text for text, _ in found):
        return None
    # A folded literal still non-ASCII once lower-cased may match an ASCII letter (U+017F
    # LATIN SMALL LETTER LONG S matches "s" under IGNORECASE), which the lower-cased text
    # would not show: no gate then. A literal compared as written is exact for any text.
    if not all(text.isascii() for text, folded in found if folded):
        return None
    return tuple(sorted(found, key=lambda lit: (len(lit[0]), lit[0], lit[1])))


def _texts(found: tuple[_Literal, ...] | None) -> tuple[str, ...] | None:
    """The literals' strings, in their order, each once."""
    return None if found is None else tuple(dict.fromkeys(text for text, _ in found))


def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Strings one of which every match of ``pattern`` contains (shortest first; lower-cased
    where the pattern ignores case, as written elsewhere), or None when no such set was
    found (a class, a look-around or an empty alternative everywhere)."""
    return _texts(_literals(pattern))


class GatedPattern:
    """A compiled pattern whose ``search`` and ``finditer`` first check ``required_literals``
    (of a case-folding pattern, on ASCII text only); everything else goes to the pattern."""

    __slots__ = ("_exact", "_folded", "_gate", "_re", "pattern")

    def __init__(self, compiled: re.Pattern[str]) -> None:
        """Wrap ``compiled``; its literals are found once, here."""
        self._re = compiled
        found = _literals(compiled)
        self._gate = _texts(found)
        self._exact = tuple(t for t, folded in found or () if not folded)
        self._folded = tuple(t for t, folded in found or () if folded)
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
        if self._gate is None:
            return True
        # Literals compared as written are looked for in the text as given: no lower-cased
        # copy of the text per pattern (the autonomy grammar asks ~80 patterns of each
        # sentence, all case-sensitive).
        if any(s in text for s in self._exact):
            return True
        if not self._folded:
            return False
        if not text.isascii():
            return True
        lowered = text.lower()
        return any(s in lowered for s in self._folded)

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
