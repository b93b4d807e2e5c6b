"""Every write is scanned for credentials; prose and signature blocks are not flagged."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.learning import secrets
from lamarck.learning.params import SecretParams
from lamarck.learning.secrets import has_secret, scan_for_secrets

# Built by concatenation so that this file itself does not look like it holds credentials.
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GH = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GL = "glpat-" + "xYz12345AbCdEfGhIjKl"
SLACK = "xoxb-" + "1234567890-abcdefghij"
OPENAI = "sk-" + "proj-Abc123Def456Ghi789Jkl012"
ANTHROPIC = "sk-ant-" + "api03-Abc123Def456Ghi789Jkl"
JWT = (
    "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"export AWS_ACCESS_KEY_ID={AWS}", "aws_access_key"),
        (f"use token {GH} for the API", "github_token"),
        (f"GITLAB={GL}", "gitlab_token"),
        (f"slack bot {SLACK}", "slack_token"),
        (f"OPENAI_API_KEY is {OPENAI}", "openai_key"),
        (f"key {ANTHROPIC}", "anthropic_key"),
        (f"Authorization: {JWT}", "jwt"),
        (PEM, "private_key"),
        ("clone https://deploy:Hunter2xyz@git.example.com/repo.git", "url_password"),
        ("set password=Zx9#kLm2Qp in the config", "password_assignment"),
        ('{"api_key": "a8F3kd92LmQ0zX7w"}', "password_assignment"),
        ("curl -H 'Authorization: Bearer abC123dEf456GhI789jKl0'", "bearer_token"),
    ],
)
def test_credential_of_each_kind_is_found(text: str, kind: str) -> None:
    assert kind in scan_for_secrets(text, SecretParams())


@pytest.mark.parametrize(
    "text",
    [
        "Run pytest from the repo root, not from tests/.",
        "The password: field must be set before login; api_key: configured in the vault.",
        "Set password=$DB_PASSWORD from the environment, or token=<your token>.",
        "postgres://localhost:5432/lamarck has no credentials",
        "Prefer `git fetch --depth 1` over `git clone` for large repositories.",
        "The sk-learn package and ghp-style names are fine in prose.",
        "Use https://user@github.com/acme/app for the remote.",
    ],
)
def test_ordinary_prose_is_not_flagged(text: str) -> None:
    assert scan_for_secrets(text, SecretParams()) == []


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_ed25519_keys_and_signatures_in_signature_blocks_are_not_flagged() -> None:
    # Seeded keys: the same 300 every run. A key or signature whose base64url text itself
    # began with a vendor prefix ("sk-", about 1 in 262,144) would match; signature blocks are
    # not among the fields the scanner reads, and this test once drew such a key at random.
    for i in range(300):
        key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"key {i}".encode()).digest())
        pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        sig = key.sign(f"lamarck/v1/memory\n{i}".encode())
        block = {
            "algorithm": "ed25519",
            "hash": "ab" * 32,
            "signed_by": _b64url(pub),
            "value": _b64url(sig),
        }
        text = json.dumps({"content": "Prefer root pytest.", "signature": block})
        assert not has_secret(text, SecretParams()), text


_EXAMPLES = [AWS, GH, GL, SLACK, OPENAI, ANTHROPIC, JWT, PEM, "password=Zq8#vLm2$Rt9xWp4"]


@given(
    st.lists(
        st.one_of(st.text(max_size=40), st.sampled_from(_EXAMPLES), st.just("https://a:b@c")),
        max_size=4,
    ).map(" ".join)
)
@settings(max_examples=300, deadline=None)
def test_the_one_scan_that_clears_a_text_agrees_with_every_rule(text: str) -> None:
    """The combined pattern finds a match exactly when one of the rules does: a text it
    clears could not have been flagged by any of them."""
    rules = [p for _, p in secrets._PATTERNS]
    rules += [secrets._URL_PASSWORD, secrets._ASSIGNMENT, secrets._BEARER]
    assert bool(secrets._ANY.search(text)) == any(r.search(text) for r in rules)
