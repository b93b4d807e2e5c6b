"""The operation key of a claim remembered without one (``Remember`` with an empty operation).

A user porting from a plain memory store (Mem0's ``add``) writes a sentence and nothing else.
Every lesson is keyed by an operation (attribution and decision-time checks look lessons up
by it), so such a claim is keyed ``note:<slug>``: the first words of the sentence, lower-case,
joined by ``-``. The same sentence gets the same key, so remembering it twice finds the first
claim, and an outcome whose run names ``note:<slug>`` as an operation can confirm it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lamarck.errors import ConfigError
from lamarck.proto.canonical import sha256_hex

__all__ = ["NOTE_PREFIX", "NoteKeyParams", "note_operation"]

#: The prefix of an operation key derived from a claim's text.
NOTE_PREFIX = "note:"
# Runs of letters and digits in any script (\w without the underscore).
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class NoteKeyParams:
    """How a note's key is cut from its text; validated on construction."""

    #: Words of the sentence kept in the key, >= 1.
    words: int = 6
    #: Characters of the slug at most (the prefix not counted), >= 8.
    max_chars: int = 64
    #: Hex characters of the content hash used when the text has no word, 8..64.
    hash_chars: int = 12

    def __post_init__(self) -> None:
        for name, lo, hi in (
            ("words", 1, 64),
            ("max_chars", 8, 256),
            ("hash_chars", 8, 64),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ConfigError(
                    f"invalid {name}: must be an integer in [{lo}, {hi}], got {value!r}",
                    reason="invalid_params",
                    field=name,
                )


def note_operation(content: str, params: NoteKeyParams) -> str:
    """``note:<slug>`` of ``content``'s first words (a hash of it when it has none)."""
    words = [w.lower() for w in _WORD.findall(content)[: params.words]]
    slug = "-".join(words)[: params.max_chars].strip("-")
    if not slug:
        slug = sha256_hex(content.strip().encode("utf-8"))[: params.hash_chars]
    return NOTE_PREFIX + slug
