"""The autonomy grammar as named data: every structural rule with its id, family and examples.

:class:`lamarck.policy.autonomy.StructureReader` compiles its patterns from :data:`RULES` (and
the regex fragments of :mod:`.vocabulary`, imported from there).
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

__all__ = [
    "CONFIG_RULE",
    "DECLINED_RULE",
    "NEGATION",
    "RULES",
    "SUPPOSED_RULE",
    "TERSE_RULE",
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
