"""Size limits of the interchange records, as one frozen, validated parameter object.

Every record parser (memory, outcome, vote) checks these on parse, so that a hostile peer
cannot make a node store, index or re-gossip an oversized object. The issue fixes four of
them (content, whole record, evidence, tags); the string caps are ours, chosen so that every
field of a record fits comfortably inside the 64 KiB record limit and no single field can
dominate a prompt, an index or a log line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from lamarck.errors import ConfigError, InvalidRecord

__all__ = ["DEFAULT_LIMITS", "MAX_SAFE_INT", "RecordLimits", "check_depth", "too_deep"]

# Counts must survive RFC 8785 canonicalisation, which writes numbers as IEEE-754 doubles:
# beyond 2**53 - 1 two different integers could canonicalise to the same bytes.
MAX_SAFE_INT = 2**53 - 1


@dataclass(frozen=True, slots=True)
class RecordLimits:
    """Upper bounds checked on every parsed record; validated on construction.

    All fields are positive integers. Byte limits count UTF-8 bytes; ``*_chars`` limits
    count Unicode code points (Python ``len``).
    """

    #: Bytes of ``content`` in UTF-8 (4 KiB).
    max_content_bytes: int = 4096
    #: Bytes of the whole serialized record, signature included (64 KiB).
    max_record_bytes: int = 65536
    #: Entries in a memory's ``evidence`` list (64).
    max_evidence: int = 64
    #: Entries in ``metadata.tags`` (32).
    max_tags: int = 32
    #: Characters of one tag.
    max_tag_chars: int = 64
    #: Characters of an opaque identifier that is not a uuid or node id (session ids, ...).
    max_id_chars: int = 128
    #: Characters of a short text: domain, environment, tool, operation key, label, target.
    max_short_chars: int = 256
    #: Characters of a free-text description (evidence description, unblock, probe).
    max_description_chars: int = 1024
    #: Entries in any other list (tools, validators, recipients, related ids, in_play, ...).
    max_list_items: int = 256
    #: Entries in ``context.constraints``.
    max_constraints: int = 32
    #: Characters of each string of the ``signature`` block. Generous on purpose: an RSA
    #: signature must still parse so that verification can say ``unknown_algorithm``.
    max_signature_chars: int = 1024
    #: Nesting depth of JSON arrays and objects, checked on the bytes before decoding. The
    #: deepest valid record nests 4 (record, block, list, entry); 32 leaves room for the
    #: schema to grow and keeps every decoder far below the interpreter's recursion limit,
    #: which a 60 KB line of brackets would otherwise reach (a ``RecursionError``).
    max_depth: int = 32

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the field and the rule if any limit is unusable."""
        for f in fields(self):
            value = getattr(self, f.name)
            # bool is an int subclass; ``True`` as a limit is a bug, not a 1.
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(
                    f"invalid {f.name}; must be an int, got {type(value).__name__}",
                    field=f.name,
                )
            if value < 1:
                raise ConfigError(f"invalid {f.name}; must be >= 1, got {value}", field=f.name)
            if value > MAX_SAFE_INT:
                raise ConfigError(f"invalid {f.name}; must be <= 2**53 - 1", field=f.name)
        # A limit on a part larger than the limit on the whole can never bind; it is a typo.
        for part in ("max_content_bytes",):
            if getattr(self, part) > self.max_record_bytes:
                raise ConfigError(
                    f"invalid {part}; must be <= max_record_bytes ({self.max_record_bytes})",
                    field=part,
                )
        if self.max_tag_chars > self.max_short_chars:
            raise ConfigError(
                f"invalid max_tag_chars; must be <= max_short_chars ({self.max_short_chars})",
                field="max_tag_chars",
            )
        if self.max_short_chars > self.max_description_chars:
            raise ConfigError(
                "invalid max_short_chars; must be <= max_description_chars "
                f"({self.max_description_chars})",
                field="max_short_chars",
            )


#: The limits every node uses unless configured otherwise.
DEFAULT_LIMITS = RecordLimits()

# A JSON string (escapes included): brackets inside one do not nest anything.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def too_deep(raw: bytes, max_depth: int) -> bool:
    """True when the JSON text ``raw`` nests arrays and objects deeper than ``max_depth``.

    Read on the bytes, before any decoder runs (a decoder recurses once per level). Brackets
    inside strings do not count; unbalanced text is the decoder's to refuse.
    """
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return False  # the common case, at memchr speed
    depth = 0
    for bracket in _BRACKET.findall(_STRING.sub(b"", raw)):
        if bracket in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def check_depth(raw: bytes, limits: RecordLimits = DEFAULT_LIMITS) -> None:
    """Refuse ``raw`` nested deeper than ``limits.max_depth``: ``InvalidRecord`` with reason
    ``too_deep`` (INVALID_ARGUMENT), never a decoder's ``RecursionError``."""
    if too_deep(raw, limits.max_depth):
        raise InvalidRecord(
            f"record nests deeper than {limits.max_depth} levels",
            reason="too_deep",
            limit=limits.max_depth,
        )
