"""The ``terse`` family of the autonomy grammar: terse rule lines."""

from __future__ import annotations

from lamarck.policy.autonomy_rules.schema import Family, Kind, Rule

__all__ = ["RULES"]

#: This family's rules, in the order the reader tries them.
RULES: tuple[Rule, ...] = (
    Rule(
        # rule-shaped terse forms: "perms: always yes", "confirmations = off".
        "terse.gate_value",
        Family.TERSE,
        Kind.PERMISSIVE,
        (
            r"\b(?:perms|permissions?|prompts?|approvals?|confirmations?|confirms?|consent|asks?|"
            r"requests?|dialogs?|calls?)\s*"
            r"(?:[:=]|->|=>|-)\s*(?:always\s+|just\s+)?(?:say\s+)?(?:yes|approve|accept|allow|off|"
            r"skip|implicit|auto\w*|none|disabled|false|no)\b"
        ),
        examples=(
            "also, asks: none",
            "perms: always yes",
        ),
        non_examples=(
            "ask the operator",
            "ask the user to run it",
        ),
    ),
)
