"""Credential scanning for every write (design sources: adaptive memory):
``scan_for_secrets(text, params) -> [kinds]``.

Applied to content and free-text fields of lessons and outcomes before anything is stored. Two
families of rules:

* vendor patterns with a fixed prefix (AWS, GitHub, GitLab, Slack, OpenAI, Anthropic, Google,
  Stripe), JWTs, PEM private key blocks, and passwords inside URLs;
* generic ``password=``/``api_key=``/``token:`` assignments and bearer tokens, flagged only
  when the value looks random (length, entropy and mixed character classes in ``SecretParams``).

Every prefixed pattern must start and end at a base64url boundary, so a pattern can never match
inside a longer base64url run: Ed25519 public keys and signatures in signature blocks (43 and
86 base64url characters) and content hashes do not trip the scanner.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from lamarck.learning.literal_gate import GatedPattern
from lamarck.learning.params import SecretParams

__all__ = ["has_secret", "scan_for_secrets"]

# A token must not be part of a longer base64url / word run on either side.
_L = r"(?<![A-Za-z0-9_\-])"
_R = r"(?![A-Za-z0-9_\-])"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "aws_access_key",
        re.compile(_L + r"(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[0-9A-Z]{16}" + _R),
    ),
    (
        "aws_secret_key",
        re.compile(
            r"(?i)aws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
        ),
    ),
    ("github_token", re.compile(_L + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _R)),
    ("github_token", re.compile(_L + r"github_pat_[A-Za-z0-9_]{22,255}" + _R)),
    ("gitlab_token", re.compile(_L + r"glpat-[A-Za-z0-9_\-]{20,}" + _R)),
    ("slack_token", re.compile(_L + r"xox[abposr]-[A-Za-z0-9\-]{10,}" + _R)),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9_/]+")),
    ("anthropic_key", re.compile(_L + r"sk-ant-[A-Za-z0-9_\-]{20,}" + _R)),
    ("openai_key", re.compile(_L + r"sk-(?!ant-)(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}" + _R)),
    ("google_api_key", re.compile(_L + r"AIza[0-9A-Za-z_\-]{35}" + _R)),
    ("stripe_key", re.compile(_L + r"[sr]k_live_[0-9A-Za-z]{16,}" + _R)),
    (
        "jwt",
        re.compile(_L + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _R),
    ),
    (
        "private_key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ),
)

# scheme://user:password@host — the password part is group "pw".
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:(?P<pw>[^\s/@]+)@[^\s/@]+")

_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9])"
    r"(?:password|passwd|pwd|passphrase|secret|client[_\-]?secret|api[_\-]?key|apikey"
    r"|access[_\-]?key|access[_\-]?token|auth[_\-]?token|private[_\-]?key|token)"
    r"[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"'`,;]+)"
)
_BEARER = re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s+(?P<value>[A-Za-z0-9._~+/\-]+=*)")

# Values that stand for a secret without being one: $VAR, ${VAR}, <password>, {{x}}, %(x)s, ***.
_PLACEHOLDER = re.compile(r"^(?:\$|<|\{|%|\*+$|x+$|X+$|\.\.\.)")


def _entropy_bits(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _char_classes(value: str) -> int:
    """How many of lower, upper, digit and symbol characters ``value`` mixes."""
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )


def _looks_random(value: str, p: SecretParams) -> bool:
    """A generic value is a credential only if it is long, mixed and high-entropy."""
    if len(value) < p.min_value_len or _PLACEHOLDER.match(value):
        return False
    return _char_classes(value) >= p.min_char_classes and _entropy_bits(value) >= p.min_entropy_bits


def _unnamed(pattern: re.Pattern[str]) -> str:
    # Group names would clash in one alternation; a leading global flag must become scoped.
    text = re.sub(r"\(\?P<\w+>", "(?:", pattern.pattern)
    if text.startswith("(?i)"):
        return f"(?i:{text[4:]})"
    return text


#: Every rule in one alternation: it matches exactly when some rule's pattern does, so a
#: clean text (nearly every one) is told apart in one scan instead of sixteen, or in none
#: when it holds no literal a rule's match needs ("://", "token", "sk-", ...: ``literal_gate``).
_ANY = GatedPattern(
    re.compile(
        "|".join(
            f"(?:{_unnamed(p)})"
            for p in (*(p for _, p in _PATTERNS), _URL_PASSWORD, _ASSIGNMENT, _BEARER)
        )
    )
)


def scan_for_secrets(text: str, p: SecretParams) -> list[str]:
    """The kinds of credential found in ``text``, each once, in rule order; empty if clean.

    ``p`` is the node's own secret params (from its one params tree), so a write and an
    import are judged by the same bounds.
    """
    if not _ANY.search(text):
        return []
    params = p
    found: list[str] = []

    def add(kind: str) -> None:
        if kind not in found:
            found.append(kind)

    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            add(kind)
    for match in _URL_PASSWORD.finditer(text):
        if not _PLACEHOLDER.match(match.group("pw")):
            add("url_password")
    for match in _ASSIGNMENT.finditer(text):
        if _looks_random(match.group("value"), params):
            add("password_assignment")
    for match in _BEARER.finditer(text):
        if _looks_random(match.group("value"), params):
            add("bearer_token")
    return found


def has_secret(text: str, p: SecretParams) -> bool:
    """Whether ``text`` carries anything that looks like a credential."""
    return bool(scan_for_secrets(text, p))
