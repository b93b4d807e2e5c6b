"""lamarck: a network in which AI agents share what they learned.

Subpackages: ``lamarck.proto`` (interchange format, canonical bytes, signatures, wire
schema), ``lamarck.node`` (daemon, store, import pipeline, gossip, agent API, CLI),
``lamarck.registry``, ``lamarck.consensus`` and ``lamarck.reputation``.
"""

from lamarck.errors import (
    AdmissionRefused,
    ConfigError,
    ConflictError,
    EvidenceError,
    InvalidRecord,
    KeyFileError,
    LamarckError,
    NotFound,
    PolicyRejected,
    QuarantinedError,
    RegistryError,
    ReplayError,
    SecretDetected,
    StoreError,
    StoreUnavailable,
    Unauthenticated,
    UnsupportedVersion,
    VerificationError,
)

__version__ = "0.1.0"

__all__ = [
    "AdmissionRefused",
    "ConfigError",
    "ConflictError",
    "EvidenceError",
    "InvalidRecord",
    "KeyFileError",
    "LamarckError",
    "NotFound",
    "PolicyRejected",
    "QuarantinedError",
    "RegistryError",
    "ReplayError",
    "SecretDetected",
    "StoreError",
    "StoreUnavailable",
    "Unauthenticated",
    "UnsupportedVersion",
    "VerificationError",
    "__version__",
]
