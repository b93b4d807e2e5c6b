"""The ``setting`` family of the autonomy grammar: agent settings that switch a gate off."""

from __future__ import annotations

from lamarck.policy.autonomy_rules.schema import Family, Kind, Rule

__all__ = ["RULES"]

#: This family's rules, in the order the reader tries them.
RULES: tuple[Rule, ...] = (
    Rule(
        "setting.enable_autorun",
        Family.SETTING,
        Kind.PERMISSIVE,
        (
            r"\benable(?:s|d)?\s+(?:the\s+)?(?:auto-?run|autorun|auto-?execute|yolo|full-?auto|"
            r"unattended\s+mode|bypass)"
        ),
        examples=("enable auto-run for terminal commands",),
        non_examples=(
            "use --enable source maps with node in ci;",
            "node dist/server.js --enable source maps regenerates it",
        ),
    ),
)
