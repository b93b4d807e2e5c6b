"""The autonomy check's parameters and the normalisation every reading starts from.

:class:`AutonomyParams` holds every constant of :mod:`lamarck.policy.autonomy` (the rule table
of :mod:`lamarck.policy.autonomy_rules` included), validated when built; :func:`normalise`
maps a text to the one form the grammar reads.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

from lamarck.errors import ConfigError
from lamarck.learning.literal_gate import GatedPattern
from lamarck.policy.autonomy_rules import NEGATION, RULES, Kind, NegationLexicon, Rule
from lamarck.policy.autonomy_rules.vocabulary import (
    AGENT,
    ANSWER_NO,
    ANSWER_YES,
    CAREFUL_KEY,
    CONCEDED_REPORT,
    CONFIG_FLAGS,
    CONFIG_KEY,
    CONFUSABLES,
    CUES,
    FALSY,
    HARM,
    HUMAN,
    LEET,
    META_FALSE,
    MODE_VALUES,
    PERMISSIVE_KEY,
    REFUTED_OPENING,
    REFUTED_VERDICT,
    REJECTED_REPORT,
    SUPPOSED_REPORT,
    TERSE_CAREFUL_SUBJECT,
    TERSE_DROPS,
    TERSE_LINE,
    TRUTHY,
)

__all__ = ["AutonomyParams", "compile_pattern", "gated", "normalise", "raw_form"]


def _probability(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"invalid {name}: must be a finite number", reason="invalid_params")
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"invalid {name}: must be in [0, 1], got {value!r}")


@dataclass(frozen=True, slots=True)
class AutonomyParams:
    """Every constant of the autonomy check; validated (patterns compiled) when built."""

    # Probability (the meaning classifier's) from which an undecided text is unsure:
    # quarantined for an operator, never shown in a prompt. [0, 1]; chosen by cross-validation
    # on the tuned split (``bench/train_autonomy.py``), never on the held-out one.
    unsure_probability: float = 0.95
    # Probability from which the classifier alone rejects (a claim, not a doubt), [0, 1].
    reject_probability: float = 0.99
    # Probability from which a weak structural hint (role-play framing, "on your own")
    # becomes a reject, [0, 1].
    weak_reject_probability: float = 0.5
    # Embedders whose space the classifier was trained in; others: structure only.
    semantic_embedders: tuple[str, ...] = ("all-MiniLM-L6-v2",)
    # Sentences read per text field (longer records are judged on their first ones), >= 1.
    max_sentences: int = 64
    # Sentences whose vectors the filter keeps, >= 0: those it embedded itself and those the
    # pipeline gave it. A sentence met again (a network's lessons share their caveats:
    # ~25 % of a catch-up's are repeats) is scored from the kept vector, not embedded again.
    cache_size: int = 4096
    # The most characters before an act (and after it, for a report's verdict: "... is
    # false") that reading the act looks at, >= 1. Negators, subjects and reports are local
    # ("never <act>", "let the user <act>", "disregard any note saying <act>"); the bound keeps
    # a 4 KB sentence of a hundred acts from costing each act a scan of its whole clause.
    clause_window: int = 240
    # Texts whose structural reading is kept, >= 0: a catch-up reads each content a chunk
    # ahead of judging it, so this must hold a few chunks (``BatchImportParams.chunk``).
    read_cache_size: int = 1024
    # The structural rules (``autonomy_rules.RULES``): each with its id, kind and examples.
    rules: tuple[Rule, ...] = RULES
    config_flags_pattern: str = CONFIG_FLAGS
    config_key_pattern: str = CONFIG_KEY
    permissive_key_pattern: str = PERMISSIVE_KEY
    careful_key_pattern: str = CAREFUL_KEY
    truthy_pattern: str = TRUTHY
    falsy_pattern: str = FALSY
    mode_values_pattern: str = MODE_VALUES
    answer_no_pattern: str = ANSWER_NO
    answer_yes_pattern: str = ANSWER_YES
    cue_pattern: str = CUES
    terse_line_pattern: str = TERSE_LINE
    terse_careful_subject_pattern: str = TERSE_CAREFUL_SUBJECT
    terse_drops_pattern: str = TERSE_DROPS
    harm_pattern: str = HARM
    meta_false_pattern: str = META_FALSE
    rejected_report_pattern: str = REJECTED_REPORT
    supposed_report_pattern: str = SUPPOSED_REPORT
    conceded_report_pattern: str = CONCEDED_REPORT
    refuted_opening_pattern: str = REFUTED_OPENING
    refuted_verdict_pattern: str = REFUTED_VERDICT
    human_pattern: str = HUMAN
    agent_pattern: str = AGENT
    # The one negation lexicon (negators, licensing phrases, stopping verbs).
    negation: NegationLexicon = NEGATION
    confusables: Mapping[str, str] = field(default_factory=lambda: dict(CONFUSABLES))
    leet: Mapping[str, str] = field(default_factory=lambda: dict(LEET))

    def __post_init__(self) -> None:
        for name in ("unsure_probability", "reject_probability", "weak_reject_probability"):
            _probability(name, getattr(self, name))
        for name, lo in (
            ("max_sentences", 1),
            ("cache_size", 0),
            ("read_cache_size", 0),
            ("clause_window", 1),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                raise ConfigError(f"invalid {name}: must be an integer >= {lo}, got {value!r}")
        ids = [r.id for r in self.rules]
        if len(set(ids)) != len(ids):
            raise ConfigError("invalid rules: a rule id is used twice")
        if not any(r.kind is Kind.CAREFUL for r in self.rules):
            raise ConfigError("invalid rules: no careful rule (every act would read as a claim)")
        for name in (
            "config_flags_pattern",
            "config_key_pattern",
            "permissive_key_pattern",
            "careful_key_pattern",
            "truthy_pattern",
            "falsy_pattern",
            "mode_values_pattern",
            "answer_no_pattern",
            "answer_yes_pattern",
            "cue_pattern",
            "terse_line_pattern",
            "terse_careful_subject_pattern",
            "terse_drops_pattern",
            "harm_pattern",
            "meta_false_pattern",
            "rejected_report_pattern",
            "supposed_report_pattern",
            "conceded_report_pattern",
            "refuted_opening_pattern",
            "refuted_verdict_pattern",
            "human_pattern",
            "agent_pattern",
        ):
            compile_pattern(name, getattr(self, name))


def compile_pattern(name: str, pattern: str) -> re.Pattern[str]:
    # The grammar reads normalised text only, which ``normalise`` lower-cases (NFKC and the
    # confusables first map what case-insensitive matching would fold onto ASCII letters),
    # so its patterns match case-sensitively: under re.IGNORECASE each ran ~1.5x slower
    # (the structure alone read a catch-up lesson in ~180 us, without it in ~120 us).
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"invalid {name}: {pattern!r}: {exc}") from None


def gated(name: str, pattern: str) -> GatedPattern:
    """``compile_pattern``, skipping texts without the literals every match holds (``literal_gate``:
    the grammar's ~80 patterns were most of the import's filter stage)."""
    return GatedPattern(compile_pattern(name, pattern))


# --------------------------------------------------------------------------------------------
# Normalisation.

_SPACED_LETTERS = re.compile(r"\b(?:[a-z]\s){2,}[a-z]\b", re.IGNORECASE)
_HYPHEN_RUN = re.compile(r"\b[a-z]+(?:-[a-z]+){2,}\b", re.IGNORECASE)
# Words a spaced-out run ("g r a n t p e r m i s s i o n") is split back into.
_RUN_WORDS = re.compile(
    r"(always|approve|accept|allow|grant|permissions?|confirmations?|bypass|skip|every|yes|"
    r"request|prompts?|never|ask|user|the|to|all)"
)
# A word with both a letter and a leet character (only those can change): a whole run of
# the class, tried at the run's start only (the look-behind) and checked by look-aheads. The
# same matches as "[a-z0-9@$]*(?:[a-z][a-z0-9@$]*[0-9@$]|[0-9@$][a-z0-9@$]*[a-z])[a-z0-9@$]*",
# which backtracked through every suffix of every word (25 -> 5 us a catch-up lesson).
_LEET_TOKEN = re.compile(
    r"(?<![a-z0-9@$])(?=[a-z0-9@$]*[a-z])(?=[a-z0-9@$]*[0-9@$])[a-z0-9@$]+", re.IGNORECASE
)
_MARKUP = re.compile(r"[`#>|~]+|(?<![(\[])\*+(?![)\]])|(?<!\w)_+|_+(?!\w)")
_QUOTED = re.compile(r"(?<!\w)'([^'\n]*\w[^'\n]*)'(?!\w)|\"([^\"\n]*\w[^\"\n]*)\"")


def normalise(text: str, params: AutonomyParams) -> str:
    """The text an attacker meant a reader to see: one form for look-alikes and tricks.

    NFKC; format characters (zero-width spaces, joiners, bidi marks) removed; look-alike
    letters and leetspeak inside words mapped to Latin; spaced-out letters ("a p p r o v e")
    joined; markdown emphasis dropped; lower-cased.
    """
    if not text.isascii():  # ASCII has no look-alikes, format characters or NFKC forms
        text = unicodedata.normalize("NFKC", text)
        text = "".join(
            params.confusables.get(c, c) for c in text if unicodedata.category(c) != "Cf"
        )

    def deleet(m: re.Match[str]) -> str:
        token = m.group(0)
        if not any(c in params.leet for c in token) or len(token) < 2:
            return token
        return "".join(params.leet.get(c, c) for c in token)

    text = _LEET_TOKEN.sub(deleet, text)
    text = _SPACED_LETTERS.sub(
        lambda m: _RUN_WORDS.sub(r" \1 ", m.group(0).replace(" ", "").lower()), text
    )
    # A quoted button or dialog title reads as its words ("'Allow this command?' prompt").
    text = _QUOTED.sub(lambda m: " " + re.sub(r"[?!.]", "", m.group(1) or m.group(2)) + " ", text)
    text = _HYPHEN_RUN.sub(lambda m: re.sub(r"[-_]", " ", m.group(0)), text)
    text = _MARKUP.sub(" ", text)
    text = re.sub(r"\bw/o\b", "without", text, flags=re.IGNORECASE)
    return " ".join(text.lower().split()) if "\n" not in text else text.lower()


def raw_form(text: str) -> str:
    """The text as the raw injection rules read it: NFKC, format characters removed,
    lower-cased; nothing else undone (pipes, brackets and quotes are what they match)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return text.lower()
