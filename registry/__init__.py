"""The peer directory: registration, admission, key pinning and liveness
(Redis and in-memory adapters + pure rules)."""

from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.directory import IssuedNonce, PeerDirectory, PeerInfo
from lamarck.registry.directory_records import DirectoryRecords
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.memory_directory import InMemoryPeerDirectory, InMemoryRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.record_directory import RecordDirectory
from lamarck.registry.records import (
    Admission,
    AdmissionProof,
    Endorsement,
    EnrollmentToken,
    Registration,
    Retraction,
    Revocation,
    sign_endorsement,
    sign_enrollment,
    sign_registration,
    sign_retraction,
    sign_revocation,
)
from lamarck.registry.redis_directory import RedisPeerDirectory, RedisRecords, connect_redis
from lamarck.registry.rules import Admitted, AdmittedVia, check_registration

__all__ = [
    "Admission",
    "AdmissionMode",
    "AdmissionProof",
    "Admitted",
    "AdmittedVia",
    "CachedDirectory",
    "DirectoryRecords",
    "EmbeddedRedis",
    "Endorsement",
    "EnrollmentToken",
    "InMemoryPeerDirectory",
    "InMemoryRecords",
    "IssuedNonce",
    "PeerDirectory",
    "PeerInfo",
    "RecordDirectory",
    "RedisPeerDirectory",
    "RedisRecords",
    "Registration",
    "RegistryClient",
    "RegistryParams",
    "Retraction",
    "Revocation",
    "TickResult",
    "check_registration",
    "connect_redis",
    "sign_endorsement",
    "sign_enrollment",
    "sign_registration",
    "sign_retraction",
    "sign_revocation",
]
