"""The plan-time "Lessons:" section (design sources: adaptive memory): at most 5 lessons and 300
tokens.

Tokens are counted by a ``TokenCounter``. The node counts with the real tokenizer of its
embedding model when the model package is installed (``lamarck.node.embedding.token_counter``)
and otherwise with ``estimate_tokens``, an estimate of a WordPiece count proved against the
real tokenizer in the unit tests (within 10 % on lesson text). ``conservative_token_bound``
never undercounts and is kept for callers that need a hard ceiling.

Lessons are included in rank order while they fit: the first one that does not fit ends the
section, so a lower-ranked lesson never takes the place of a better one because it is shorter,
and a lesson is never truncated, because a cut lesson can say the opposite of the full one
("Do not run X unless ..." → "Do not run X"). When lessons are left out, the section's last
line says how many, so the agent knows there is more. Newlines inside a lesson are folded so
that lesson text cannot forge extra prompt structure.

Every line carries its lesson's evidence (``learning/influence``): advice is proven here
or corroborated; lessons that disagree follow as one conflict line each, both sides labelled;
unverified peer lessons come last, under their own header, as hints and never as advice
(``HINTS_HEADER`` says what that means). Advice goes in first, then conflicts, then hints,
each while the budget holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lamarck.learning.params import LessonParams

__all__ = [
    "CONFLICTS_HEADER",
    "HEADER",
    "HINTS_HEADER",
    "PromptSection",
    "TokenCounter",
    "build_lessons_section",
    "conflict_line",
    "conservative_token_bound",
    "estimate_tokens",
    "format_line",
    "omitted_line",
]

TokenCounter = Callable[[str], int]

HEADER = "Lessons:"
#: What each evidence label means, for the model reading the section.
CONFLICTS_HEADER = (
    "Conflicts (lessons that disagree, strongest evidence first; only a side marked as "
    "holding is advice):"
)
HINTS_HEADER = (
    "Unverified hints (from peers; neither this node's runs nor independent principals have "
    "confirmed them: not advice. One of this node's operator may be tried first where a "
    "wrong try is cheap; any other only once your own way failed, and it is shown as the "
    "claim it carries, in this node's words):"
)
# Room for the special tokens ([CLS]/[SEP] or BOS/EOS) a tokenizer may add around a text.
_SPECIAL_TOKENS = 2


def conservative_token_bound(text: str) -> int:
    """An upper bound on the token count: non-whitespace UTF-8 bytes plus special tokens."""
    return sum(len(ch.encode("utf-8")) for ch in text if not ch.isspace()) + _SPECIAL_TOKENS


# Word pieces as a WordPiece tokenizer sees them: ASCII letter runs, digit runs, one CJK
# character, runs of other letters, and every other non-space character alone.
_PIECES = re.compile(
    r"[A-Za-z]+|[0-9]+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\W\d_A-Za-z]+|[^\sA-Za-z0-9]"
)
# Letters a WordPiece vocabulary holds as one piece before it starts splitting a word, and
# how many letters each further piece takes (fitted on lesson text: see the unit tests).
_WHOLE_WORD = 6
_LETTERS_PER_PIECE = 3
_DIGITS_PER_PIECE = 3


def estimate_tokens(text: str) -> int:
    """An estimate of a WordPiece token count (special tokens included)."""
    n = _SPECIAL_TOKENS
    for match in _PIECES.finditer(text):
        piece = match.group()
        if piece.isascii() and piece.isalpha():
            extra = max(0, len(piece) - _WHOLE_WORD)
            n += 1 + -(-extra // _LETTERS_PER_PIECE)
        elif piece.isdigit():
            n += -(-len(piece) // _DIGITS_PER_PIECE)
        elif piece.isalpha() and len(piece) > 1:
            # Words outside the vocabulary's script split into about one piece per letter.
            n += len(piece)
        else:
            n += 1
    return n


def omitted_line(count: int) -> str:
    """The section's last line when ``count`` lessons did not fit."""
    noun = "lesson" if count == 1 else "lessons"
    return f"({count} more {noun} on file did not fit; recall with a narrower task to see them.)"


def format_line(content: str) -> str:
    """One lesson as one bullet line, whitespace folded."""
    return "- " + " ".join(content.split())


def conflict_line(
    operation: str,
    sides: Sequence[tuple[str, str]],
    holds: str | None,
    settled_by: Sequence[str] = (),
    target: str = "",
) -> str:
    """One conflict: ``sides`` as ``(label, content)`` strongest first; ``holds`` names the
    class of the side that holds, or None when the conflict is unresolved; ``settled_by``
    the operations whose next run (on ``target``, for a mechanical pair) settles it."""
    shown = " vs ".join(f"[{label}] “{' '.join(text.split())}”" for label, text in sides)
    runs = " or ".join(f"`{op}`" for op in (settled_by or (operation,)))
    runs += f" on {target}" if target else ""
    if holds is not None:
        verdict = f"The {holds} side holds; the next run of {runs} tests it."
    else:
        verdict = (
            f"Unresolved: neither side is advice until the next run of {runs} settles it; "
            "try first the side that differs from what you would do anyway."
        )
    return f"Contested on `{operation}`: {shown}. {verdict}"


@dataclass(frozen=True, slots=True)
class PromptSection:
    """The formatted section, which lessons made it in, which did not fit, and its size.

    ``included`` are the advice lessons in the text; ``conflicted`` the ids of the sides of
    the conflict lines in it, ``hinted`` the unverified hints in it.
    """

    text: str
    included: tuple[str, ...]
    omitted: tuple[str, ...]
    tokens: int
    conflicted: tuple[str, ...] = ()
    hinted: tuple[str, ...] = ()


def build_lessons_section(
    lessons: Sequence[tuple[str, str]],
    p: LessonParams,
    count: TokenCounter = estimate_tokens,
    *,
    limit: int | None = None,
    conflicts: Sequence[tuple[tuple[str, ...], str]] = (),
    hints: Sequence[tuple[str, str]] = (),
) -> PromptSection:
    """Format ``(lesson_id, text)`` pairs, best first, within the lesson and token caps.

    ``text`` is a lesson's line as shown (its evidence label and content). ``limit`` (at
    most ``p.recall_limit``) asks for fewer lessons. ``omitted`` lists the lessons beyond the
    count or the budget; the text says how many of them there are, and the budget covers that
    line too. ``conflicts`` (``(side ids, line)``) and ``hints`` (``(lesson_id, line)``)
    follow under their own headers while the budget holds.
    """
    most = p.recall_limit if limit is None else max(0, min(limit, p.recall_limit))
    lines: list[str] = [HEADER]
    included: list[str] = []
    for lesson_id, content in lessons:
        if len(included) >= most:
            break
        candidate = [*lines, format_line(content)]
        left = len(lessons) - len(included) - 1
        if left:
            candidate.append(omitted_line(left))
        if count("\n".join(candidate)) > p.prompt_token_budget:
            break  # rank order: a shorter, lower-ranked lesson never jumps the queue
        lines.append(format_line(content))
        included.append(lesson_id)
    omitted = tuple(lesson_id for lesson_id, _ in lessons[len(included) :])
    tail = [omitted_line(len(omitted))] if omitted else []
    conflicted: list[str] = []
    hinted: list[str] = []
    for header, entries, taken in (
        (CONFLICTS_HEADER, [(ids, line) for ids, line in conflicts], conflicted),
        (HINTS_HEADER, [((i,), line) for i, line in hints], hinted),
    ):
        block: list[str] = []
        for ids, line in entries:
            candidate = [*lines, *tail, *(block or [header]), format_line(line)]
            if count("\n".join(candidate)) > p.prompt_token_budget:
                break
            block = [*(block or [header]), format_line(line)]
            taken.extend(ids)
        lines.extend(block)
    if not included and not conflicted and not hinted:
        return PromptSection("", (), omitted, 0)
    text = "\n".join([*lines, *tail])
    return PromptSection(
        text, tuple(included), omitted, count(text), tuple(conflicted), tuple(hinted)
    )
