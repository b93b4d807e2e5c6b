"""The plan-time "Lessons:" section (seed 000 §3.4): at most 5 lessons and 300 tokens.

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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lamarck.node.learning.params import LessonParams

__all__ = [
    "HEADER",
    "PromptSection",
    "TokenCounter",
    "build_lessons_section",
    "conservative_token_bound",
    "estimate_tokens",
    "format_line",
    "omitted_line",
]

TokenCounter = Callable[[str], int]

HEADER = "Lessons:"
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


@dataclass(frozen=True, slots=True)
class PromptSection:
    """The formatted section, which lessons made it in, which did not fit, and its size."""

    text: str
    included: tuple[str, ...]
    omitted: tuple[str, ...]
    tokens: int


def build_lessons_section(
    lessons: Sequence[tuple[str, str]],
    p: LessonParams,
    count: TokenCounter = estimate_tokens,
    *,
    limit: int | None = None,
) -> PromptSection:
    """Format ``(lesson_id, content)`` pairs, best first, within the lesson and token caps.

    ``limit`` (at most ``p.recall_limit``) asks for fewer lessons. ``omitted`` lists the
    lessons beyond the count or the budget; the text says how many of them there are, and the
    budget covers that line too.
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
    if not included:
        return PromptSection("", (), omitted, 0)
    if omitted:
        lines.append(omitted_line(len(omitted)))
    text = "\n".join(lines)
    return PromptSection(text, tuple(included), omitted, count(text))
