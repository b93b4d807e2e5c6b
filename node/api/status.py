"""The one table mapping lamarck's typed errors to gRPC status codes.

The reason travels in the status details as a ``google.rpc.ErrorInfo`` (domain
``lamarck.dev``) and, for clients that do not decode rich status, in the trailing metadata
key ``lamarck-reason``. docs/errors.md renders this table for people.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from lamarck import errors as e

__all__ = [
    "ERROR_DOMAIN",
    "REASON_METADATA_KEY",
    "STATUS_TABLE",
    "reason_from_rpc_error",
    "status_for",
    "to_rich_status",
]

ERROR_DOMAIN = "lamarck.dev"
REASON_METADATA_KEY = "lamarck-reason"

# Most specific first: the first matching class wins.
STATUS_TABLE: tuple[tuple[type[e.LamarckError], grpc.StatusCode], ...] = (
    (e.UnsupportedVersion, grpc.StatusCode.INVALID_ARGUMENT),
    (e.InvalidRecord, grpc.StatusCode.INVALID_ARGUMENT),
    (e.VerificationError, grpc.StatusCode.PERMISSION_DENIED),
    (e.SecretDetected, grpc.StatusCode.INVALID_ARGUMENT),
    (e.ReplayError, grpc.StatusCode.ALREADY_EXISTS),
    (e.QuarantinedError, grpc.StatusCode.FAILED_PRECONDITION),
    (e.PolicyRejected, grpc.StatusCode.FAILED_PRECONDITION),
    (e.NotFound, grpc.StatusCode.NOT_FOUND),
    (e.ConflictError, grpc.StatusCode.ABORTED),
    (e.EvidenceError, grpc.StatusCode.FAILED_PRECONDITION),
    (e.StoreUnavailable, grpc.StatusCode.UNAVAILABLE),
    (e.StoreError, grpc.StatusCode.INTERNAL),
    (e.AdmissionRefused, grpc.StatusCode.PERMISSION_DENIED),
    (e.RegistryError, grpc.StatusCode.UNAVAILABLE),
    (e.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (e.KeyFileError, grpc.StatusCode.FAILED_PRECONDITION),
    (e.ConfigError, grpc.StatusCode.INVALID_ARGUMENT),
    (e.ProofInvalid, grpc.StatusCode.PERMISSION_DENIED),
    (e.RotationInvalid, grpc.StatusCode.PERMISSION_DENIED),
    (e.DeliveryFailed, grpc.StatusCode.UNAVAILABLE),
    (e.CliError, grpc.StatusCode.FAILED_PRECONDITION),
    (e.LamarckError, grpc.StatusCode.UNKNOWN),
)

# Reasons whose status differs from their class default (rate limits: RESOURCE_EXHAUSTED).
REASON_OVERRIDES: dict[str, grpc.StatusCode] = {
    "rate_limited": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "too_many_concurrent": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "batch_too_large": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "records_rate_limited": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "too_large": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    # An operator action asked without the operator's credential (the agent token included).
    "operator_credential_required": grpc.StatusCode.PERMISSION_DENIED,
    "future_timestamp": grpc.StatusCode.INVALID_ARGUMENT,
    "expired": grpc.StatusCode.INVALID_ARGUMENT,
}


def status_for(error: e.LamarckError) -> grpc.StatusCode:
    """The gRPC status code for a typed error."""
    override = REASON_OVERRIDES.get(error.reason)
    if override is not None:
        return override
    for cls, code in STATUS_TABLE:
        if isinstance(error, cls):
            return code
    return grpc.StatusCode.UNKNOWN


def to_rich_status(error: e.LamarckError) -> status_pb2.Status:
    """A ``google.rpc.Status`` carrying an ``ErrorInfo`` with the machine-readable reason."""
    code = status_for(error)
    info = error_details_pb2.ErrorInfo(
        reason=error.reason,
        domain=ERROR_DOMAIN,
        metadata={"type": type(error).__name__, **{k: str(v) for k, v in error.details.items()}},
    )
    detail = any_pb2.Any()
    detail.Pack(info)
    return status_pb2.Status(
        code=getattr(code_pb2, code.name), message=str(error), details=[detail]
    )


def reason_from_rpc_error(err: grpc.RpcError) -> str | None:
    """The lamarck reason carried by a failed call, read from its trailing metadata."""
    trailing: Any = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    # Sync calls yield (key, value) tuples, aio calls a Metadata object; both iterate as pairs.
    for key, value in trailing or ():
        if key == REASON_METADATA_KEY:
            return value if isinstance(value, str) else value.decode()
    return None
