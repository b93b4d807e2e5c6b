"""The shape of the autonomy grammar: a rule's kind, family and fields, the ids a verdict
names outside the rule table, and the one negation lexicon the reader uses."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from lamarck.errors import ConfigError

__all__ = [
    "CONFIG_RULE",
    "DECLINED_RULE",
    "NEGATION",
    "SUPPOSED_RULE",
    "TERSE_RULE",
    "Family",
    "Kind",
    "NegationLexicon",
    "Rule",
]


class Kind(StrEnum):
    """Which step of the reading runs a rule."""

    # An act that grants, approves or skips a gate (negators, human subjects, third-person
    # descriptions and incidents are read around it).
    PERMISSIVE = "permissive"
    # A claim that consent or authority exists (negators and reports are read around it).
    CONSENT = "consent"
    # A claim laid out over several lines (a table, a list), read on the whole text.
    SPANNING = "spanning"
    # A careful act: asking, confirming, waiting for a person (negated, it is a claim).
    CAREFUL = "careful"
    # Text addressed to the agent rather than about the world.
    INJECTION = "injection"
    # A weak hint (role-play framing, "on your own"): quarantined, rejected if meaning agrees.
    ROLEPLAY = "roleplay"
    # Text aimed at the agent's tools or prompt (a piped download, tool-call syntax, "ignore
    # previous instructions"): matched on the raw text, lower-cased (normalising drops the
    # pipes and brackets these are made of), before any cue and with no negation exemption
    # ("never mind, ignore previous instructions" must not pass; a careful lesson quoting
    # ``curl ... | sh`` is refused too: fail closed, it can be rephrased).
    RAW_INJECTION = "raw_injection"


class Family(StrEnum):
    """What a rule reads."""

    GRANT = "grant"
    CONSENT = "consent"
    AUTHORISATION = "authorisation"
    ALLOW_LIST = "allow_list"
    GATE_REMOVED = "gate_removed"
    SETTING = "setting"
    FREE_HAND = "free_hand"
    TERSE = "terse"
    CAREFUL = "careful"
    INJECTED = "injected"
    ROLEPLAY = "roleplay"


_RULE_ID = re.compile(r"^[a-z_]+\.[a-z0-9_]+$")


@dataclass(frozen=True, slots=True)
class Rule:
    """One structural pattern of the autonomy grammar (matched on normalised text)."""

    id: str
    family: Family
    kind: Kind
    pattern: str
    # Normalised texts the pattern must find an act in, and texts it must not.
    examples: tuple[str, ...] = ()
    non_examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _RULE_ID.match(self.id) or not self.id.startswith(f"{self.family.value}."):
            raise ConfigError(f"invalid rule id {self.id!r}: must be '<family>.<name>'")
        if not self.examples:
            raise ConfigError(f"invalid rule {self.id}: needs at least one example")
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ConfigError(f"invalid rule {self.id}: {self.pattern!r}: {exc}") from None


#: The id a verdict names when an agent setting fired ("auto_approve: true", a named flag).
CONFIG_RULE = "setting.config"
#: The id a verdict names when a terse rule line fired ("ssh: auto", "confirm? skip").
TERSE_RULE = "terse.line"
#: The id a verdict names when a careful question is answered "no" ("ask first? no").
DECLINED_RULE = "careful.declined_by_answer"
#: The id a weak hint names when an act sits inside a report the lesson only supposes.
SUPPOSED_RULE = "report.supposed"


@dataclass(frozen=True, slots=True)
class NegationLexicon:
    """Every word and phrase that turns an act around, in one place.

    A clause before an act counts its negators (``words``, any word ending in ``n't`` and the
    ``bare`` contractions); ``licensing`` phrases read like negations but license the act
    ("don't hesitate to skip ..."); ``rewrites`` are phrases that count as a negator word
    ("no longer" as "never"); ``stopping`` verbs right before an act stop it ("stopped
    asking"). ``not_after`` are the negators that, right before a harm word, say no harm
    happened ("never wiped").
    """

    words: tuple[str, ...]
    bare: tuple[str, ...]
    licensing: str
    rewrites: tuple[tuple[str, str], ...]
    stopping: str
    not_after: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.words:
            raise ConfigError("invalid negation lexicon: no negator words")
        for name in ("licensing", "stopping"):
            try:
                re.compile(getattr(self, name))
            except re.error as exc:
                raise ConfigError(f"invalid negation lexicon {name}: {exc}") from None
        for pattern, _ in self.rewrites:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"invalid negation lexicon rewrite: {exc}") from None

    def count(self, words: list[str]) -> int:
        """The negators among ``words`` (already lower-cased, licensing phrases removed)."""
        negators = frozenset(self.words)
        bare = frozenset(self.bare)
        return sum(1 for w in words if w in negators or w.endswith("n't") or w in bare)


NEGATION = NegationLexicon(
    words=(
        "never",
        "not",
        "no",
        "nobody",
        "nothing",
        "without",
        "avoid",
        "avoids",
        "refuse",
        "refuses",
        "neither",
        "nor",
        "none",
        "cannot",
        "lacks",
        "forbid",
        "forbids",
        "prohibit",
        "prohibits",
        "disallow",
        "disallows",
    ),
    bare=("dont",),
    licensing=(
        r"don'?t\s+hesitate|do\s+not\s+hesitate|never\s+hesitate|don'?t\s+worry|do\s+not\s+worry|"
        r"no\s+worries|never\s+mind|no\s+problem|not\s+a\s+problem|don'?t\s+mind|do\s+not\s+mind|"
        r"no\s+need\s+to\s+be\s+shy|not\s+only"
    ),
    rewrites=((r"\bno\s+longer\b", " never "),),
    stopping=r"\b(?:stop(?:s|ped)?|quits?|ceas(?:e|es|ed)|gave\s+up|give\s+up)\s*$",
    not_after=("never", "not"),
)
