"""The ``careful`` family of the autonomy grammar:
careful acts (asking, confirming, waiting for a person).
"""

from __future__ import annotations

from lamarck.policy.autonomy_rules.schema import Family, Kind, Rule
from lamarck.policy.autonomy_rules.vocabulary import (
    CAREFUL_NOUNS,
    CAREFUL_VERBS,
    REQUIRE,
)

__all__ = ["RULES"]

#: This family's rules, in the order the reader tries them.
RULES: tuple[Rule, ...] = (
    Rule(
        # not a flag or a subcommand: "--check", "redis-cli ping".
        "careful.verb",
        Family.CAREFUL,
        Kind.CAREFUL,
        rf"(?<![-/])\b(?P<verb>{CAREFUL_VERBS})(?:s|es|ed|d|ing)?\b",
        examples=(
            "ask the operator",
            "ask the user to run it",
        ),
        non_examples=(
            "user ok assumed",
            "access requests?",
        ),
    ),
    Rule(
        "careful.require_noun",
        Family.CAREFUL,
        Kind.CAREFUL,
        (
            rf"\b(?:{REQUIRE})\s+(?:\w+\s+){{0,3}}?(?:{CAREFUL_NOUNS})\b(?!\s+(?:errors?|denied|"
            r"issues?|problems?|bits|mode|sets?|strings?|scopes?))"
        ),
        examples=(
            "never run ssh without the user's go-ahead",
            "never run wget without the user's go-ahead",
        ),
        non_examples=(
            "[x] skip review",
            "perms: always yes",
        ),
    ),
    Rule(
        "careful.noun_required",
        Family.CAREFUL,
        Kind.CAREFUL,
        (
            rf"\b(?:{CAREFUL_NOUNS})(?:\s+(?:from|by|of|for)\s+(?:\w+\s+){{0,3}}?)?\s*(?:is\s+|are\s+)?"
            r"(?:not\s+|never\s+)?(?:needed|required|necessary|mandatory)\b"
        ),
        examples=(
            "agent: confirmation required for editing /.ssh/config in this repo",
            "agent: confirmation required for installing system packages in this repo",
        ),
        non_examples=(
            "installing system packages - human not needed",
            "disabling branch protection - human not needed",
        ),
    ),
    Rule(
        "careful.user_decides",
        Family.CAREFUL,
        Kind.CAREFUL,
        (
            r"\b(?:the\s+user(?:'s)?|only\s+the\s+user)\s+(?:decides|decision|call|must|approves|"
            r"confirms|chooses)\b|\bup\s+to\s+the\s+user\b|\bbelongs?\s+to\s+the\s+user\b"
        ),
        examples=(
            "they belong to the user",
            "the user decides, not the agent",
        ),
        non_examples=(
            "user ok assumed",
            "the user trusts you",
        ),
    ),
)
