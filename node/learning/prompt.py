"""The plan-time "Lessons:" section (seed 000 §3.4): at most 5 lessons and 300 tokens.

Tokens are counted by a ``TokenCounter``. The default, ``conservative_token_bound``, never
undercounts a WordPiece tokenizer (all-MiniLM-L6-v2's, proved in the unit tests against the real
tokenizer) nor a byte-level BPE one: whitespace separates tokens and is never one itself, and
every other UTF-8 byte yields at most one token. A more exact counter can be passed in.

Lessons are included in rank order while they fit; one that does not fit is skipped whole
rather than truncated, because a cut lesson can say the opposite of the full one ("Do not run X
unless ..." → "Do not run X"). Newlines inside a lesson are folded so that lesson text cannot
forge extra prompt structure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lamarck.node.learning.params import LessonParams

__all__ = [
    "HEADER",
    "PromptSection",
    "TokenCounter",
    "build_lessons_section",
    "conservative_token_bound",
    "format_line",
]

TokenCounter = Callable[[str], int]

HEADER = "Lessons:"
# Room for the special tokens ([CLS]/[SEP] or BOS/EOS) a tokenizer may add around a text.
_SPECIAL_TOKENS = 2


def conservative_token_bound(text: str) -> int:
    """An upper bound on the token count: non-whitespace UTF-8 bytes plus special tokens."""
    return sum(len(ch.encode("utf-8")) for ch in text if not ch.isspace()) + _SPECIAL_TOKENS


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
    count: TokenCounter = conservative_token_bound,
) -> PromptSection:
    """Format ``(lesson_id, content)`` pairs, best first, within the lesson and token caps."""
    lines: list[str] = [HEADER]
    included: list[str] = []
    omitted: list[str] = []
    for lesson_id, content in lessons:
        if len(included) >= p.recall_limit:
            omitted.append(lesson_id)
            continue
        candidate = "\n".join([*lines, format_line(content)])
        if count(candidate) <= p.prompt_token_budget:
            lines.append(format_line(content))
            included.append(lesson_id)
        else:
            omitted.append(lesson_id)
    if not included:
        return PromptSection("", (), tuple(omitted), 0)
    text = "\n".join(lines)
    return PromptSection(text, tuple(included), tuple(omitted), count(text))
