"""The one error hierarchy of lamarck.

Every rejection is a distinct type carrying a machine-readable ``reason`` (a short
snake_case string), so that the edge can map it to a gRPC status, count it in metrics and
record it, and a caller can branch on it without parsing prose.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AdmissionRefused",
    "CliError",
    "ConfigError",
    "ConflictError",
    "DeliveryFailed",
    "EvidenceError",
    "InvalidRecord",
    "KeyFileError",
    "LamarckError",
    "NotFound",
    "PolicyRejected",
    "ProofInvalid",
    "QuarantinedError",
    "RegistryError",
    "ReplayError",
    "RotationInvalid",
    "SecretDetected",
    "StoreError",
    "StoreUnavailable",
    "Unauthenticated",
    "UnsupportedVersion",
    "VerificationError",
]


class LamarckError(Exception):
    """Root of every error lamarck raises on purpose; ``reason`` is machine-readable."""

    default_reason = "error"

    def __init__(self, message: str = "", *, reason: str | None = None, **details: Any) -> None:
        self.reason: str = reason or self.default_reason
        self.details: dict[str, Any] = details
        super().__init__(message or self.reason)

    def __str__(self) -> str:
        text = super().__str__()
        return text if text.startswith(self.reason) else f"{self.reason}: {text}"


class InvalidRecord(LamarckError):
    """A record (memory, outcome, vote, bundle line) is malformed or breaks a limit."""

    default_reason = "malformed"


class UnsupportedVersion(InvalidRecord):
    """A record names a schema major version this node does not know."""

    default_reason = "unsupported_version"


class VerificationError(LamarckError):
    """A signature, hash or key binding does not check out.

    Reasons: ``bad_signature``, ``hash_mismatch``, ``unknown_algorithm``, ``key_mismatch``,
    ``malformed``, ``future_timestamp``, ``expired``, ``not_canonical``.
    """

    default_reason = "bad_signature"


class KeyFileError(LamarckError):
    """An identity key file is missing, unreadable, or readable by others."""

    default_reason = "key_file"


class ConfigError(LamarckError):
    """Configuration is invalid; the message names the field and the rule."""

    default_reason = "invalid_config"


class StoreError(LamarckError):
    """A lesson-store operation failed; Postgres errors are translated into subclasses."""

    default_reason = "store_error"


class StoreUnavailable(StoreError):
    """The database cannot be reached or lacks a required extension."""

    default_reason = "store_unavailable"


class NotFound(StoreError):
    """A lesson, outcome or record with that id does not exist."""

    default_reason = "not_found"


class ConflictError(StoreError):
    """A write conflicts with stored state (duplicate id, superseded row, retired chain)."""

    default_reason = "conflict"


class EvidenceError(StoreError):
    """A lesson names evidence that does not exist, was retired by the user, or does not show
    what the lesson says (a situation's evidence must be the turn that met the blocker)."""

    default_reason = "unknown_evidence"


class PolicyRejected(LamarckError):
    """A record or request was refused by policy (filters, access, limits)."""

    default_reason = "policy_rejected"


class SecretDetected(PolicyRejected):
    """A write carries something that looks like a credential."""

    default_reason = "secret_detected"


class ReplayError(PolicyRejected):
    """A record was seen before, or is an older version of a known record (rollback)."""

    default_reason = "replay"


class QuarantinedError(PolicyRejected):
    """A record was held in quarantine rather than imported."""

    default_reason = "quarantined"


class RegistryError(LamarckError):
    """The peer registry refused or failed an operation."""

    default_reason = "registry_error"


class AdmissionRefused(RegistryError):
    """A registration did not pass admission (no endorsement, bad token, revoked id)."""

    default_reason = "admission_refused"


class Unauthenticated(LamarckError):
    """A peer call did not prove who sent it (no, expired, or foreign peer token)."""

    default_reason = "unauthenticated"


class ProofInvalid(LamarckError):
    """An id's admission proof does not verify for this reader; ``reason`` says why.

    ``bounded`` is True when the refusal depends on how far this read looked (endorsement
    depth, records not fetched): such a verdict is never memoised.
    """

    default_reason = "bad_admission_proof"

    def __init__(
        self, message: str = "", *, reason: str | None = None, bounded: bool = False, **details: Any
    ) -> None:
        super().__init__(message, reason=reason, **details)
        self.bounded = bounded


class RotationInvalid(LamarckError):
    """A rotation record does not authorise this pin move; ``reason`` says why."""

    default_reason = "bad_rotation"


class DeliveryFailed(LamarckError):
    """A peer did not take a batch (transport error, or acks saying "try again later")."""

    default_reason = "delivery_failed"


class CliError(LamarckError):
    """A failure found by the CLI itself (no node running, unreadable bundle file, ...)."""

    default_reason = "cli_error"
