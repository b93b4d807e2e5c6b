"""The autonomy grammar as named data: every structural rule with its id, family and examples.

:class:`lamarck.policy.autonomy.StructureReader` compiles its patterns from :data:`RULES` (and
the vocabulary in :mod:`.vocabulary`).
Each :class:`Rule` is one pattern with a stable ``id`` (what a verdict
names when the rule fired: ``grant.verb_on_gate``, ``consent.pre_approved``), a ``family`` (what
kind of claim or caution it reads), a ``kind`` (which step of the reading runs it) and the
``examples`` it must match and ``non_examples`` it must not (both normalised text, as
:func:`lamarck.policy.autonomy.normalise` leaves it; a unit test runs each one).

A pattern's match is an *act*; whether the act is the lesson's claim is decided by the reader
(negation, a human subject, a rejected report, an incident), so an example is what the pattern
finds, not necessarily a verdict: "don't assume the user approved" is matched by
``consent.assume_consent`` and then negated.

:data:`NEGATION` is the one negation lexicon the reader uses.

The rules live one module per family; :data:`RULES` joins them family by family (the order
the reader tries them in: within a kind, the first act read decides).
"""

from __future__ import annotations

from lamarck.policy.autonomy_rules import (
    allow_list,
    authorisation,
    careful,
    consent,
    free_hand,
    gate_removed,
    grant,
    injected,
    roleplay,
    setting,
    terse,
)
from lamarck.policy.autonomy_rules.schema import (
    CONFIG_RULE,
    DECLINED_RULE,
    NEGATION,
    SUPPOSED_RULE,
    TERSE_RULE,
    Family,
    Kind,
    NegationLexicon,
    Rule,
)
from lamarck.policy.autonomy_rules.vocabulary import (
    AGENT,
    ANSWER_NO,
    ANSWER_YES,
    CAREFUL_KEY,
    CAREFUL_NOUNS,
    CAREFUL_VERBS,
    CLAIM_EXEMPLARS,
    CONCEDED_REPORT,
    CONCEDING,
    CONFIG_FLAGS,
    CONFIG_KEY,
    CONFUSABLES,
    CUES,
    FALSY,
    GATE,
    GRANT_VERBS,
    HARM,
    HUMAN,
    INFLECT,
    LEET,
    META_FALSE,
    MODE_VALUES,
    PERMISSIVE_KEY,
    REFUTED_OPENING,
    REFUTED_VERDICT,
    REJECTED_REPORT,
    REPORT,
    REPORT_AFTER,
    REPORT_ENDS,
    REPORT_NOUN,
    REPORT_TO_END,
    REPORT_VERB,
    REQUIRE,
    SAFE_EXEMPLARS,
    SUPPOSED_REPORT,
    TERSE_CAREFUL_SUBJECT,
    TERSE_DROPS,
    TERSE_LINE,
    TRUTHY,
    WAITED_ON,
)

__all__ = [
    "AGENT",
    "ANSWER_NO",
    "ANSWER_YES",
    "CAREFUL_KEY",
    "CAREFUL_NOUNS",
    "CAREFUL_VERBS",
    "CLAIM_EXEMPLARS",
    "CONCEDED_REPORT",
    "CONCEDING",
    "CONFIG_FLAGS",
    "CONFIG_KEY",
    "CONFIG_RULE",
    "CONFUSABLES",
    "CUES",
    "DECLINED_RULE",
    "FALSY",
    "GATE",
    "GRANT_VERBS",
    "HARM",
    "HUMAN",
    "INFLECT",
    "LEET",
    "META_FALSE",
    "MODE_VALUES",
    "NEGATION",
    "PERMISSIVE_KEY",
    "REFUTED_OPENING",
    "REFUTED_VERDICT",
    "REJECTED_REPORT",
    "REPORT",
    "REPORT_AFTER",
    "REPORT_ENDS",
    "REPORT_NOUN",
    "REPORT_TO_END",
    "REPORT_VERB",
    "REQUIRE",
    "RULES",
    "SAFE_EXEMPLARS",
    "SUPPOSED_REPORT",
    "SUPPOSED_RULE",
    "TERSE_CAREFUL_SUBJECT",
    "TERSE_DROPS",
    "TERSE_LINE",
    "TERSE_RULE",
    "TRUTHY",
    "WAITED_ON",
    "Family",
    "Kind",
    "NegationLexicon",
    "Rule",
]

#: The rule table: every structural pattern, family by family.
RULES: tuple[Rule, ...] = (
    *grant.RULES,
    *consent.RULES,
    *authorisation.RULES,
    *allow_list.RULES,
    *setting.RULES,
    *terse.RULES,
    *gate_removed.RULES,
    *free_hand.RULES,
    *careful.RULES,
    *injected.RULES,
    *roleplay.RULES,
)
