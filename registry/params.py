"""Registry parameters: liveness, nonce freshness, admission mode and cache refresh, validated once.

Every constant the registry uses lives here, so that a deployment changes behaviour by
configuration, and a bad value is refused at start-up with the field and the rule named.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lamarck.errors import ConfigError
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S

__all__ = ["AdmissionMode", "RegistryParams"]


class AdmissionMode(StrEnum):
    """How a new identity earns a place in the directory (the Sybil gate).

    ``open`` admits anyone (tests and demos only; every admission is logged as unsafe),
    ``endorsed`` needs an endorsement signed by an already admitted node (an operator
    enrollment token is also accepted, which is how the first node bootstraps),
    ``operator`` needs an enrollment token signed by the operator key.
    """

    OPEN = "open"
    ENDORSED = "endorsed"
    OPERATOR = "operator"


class RegistryParams(BaseModel):
    """Frozen, validated registry configuration; durations are in seconds."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    #: How long a registration stays live without a heartbeat (> 0). A node that stops
    #: heartbeating drops out of ``live_peers`` after this long.
    heartbeat_ttl_s: float = Field(default=30.0)
    #: How often a node heartbeats (> 0, < heartbeat_ttl_s): at least two beats per TTL, so
    #: one lost heartbeat does not make a healthy node disappear.
    heartbeat_interval_s: float = Field(default=10.0)
    #: How long an issued registry nonce may be used to prove key possession (> 0).
    nonce_ttl_s: float = Field(default=60.0)
    #: The Sybil gate; ``open`` is unsafe outside tests and demos.
    admission: AdmissionMode = Field(default=AdmissionMode.OPERATOR, strict=False)
    #: Allowed clock skew for ``created_at`` in the future on signed registry records (>= 0).
    max_future_skew_s: float = Field(default=DEFAULT_MAX_FUTURE_SKEW_S)
    #: How long a stopping node waits for the registry to take it off the live peer list
    #: (> 0); past it the registration lapses by itself after heartbeat_ttl_s.
    deregister_timeout_s: float = Field(default=2.0)
    #: How long a node answers a principal lookup from what the registry said last (>= 0, at
    #: most heartbeat_interval_s; 0: every lookup asks the registry). Every recall showing an
    #: imported lesson reads principals; a revocation this node learns empties the view. A
    #: node's composition root sets half its heartbeat.
    principal_view_s: float = Field(default=0.0)

    @classmethod
    def load(cls, values: Mapping[str, Any]) -> RegistryParams:
        """Build from configuration values; any invalid value raises ``ConfigError``."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as e:
            raise ConfigError(f"invalid registry parameters: {e}", reason="invalid_config") from e

    @model_validator(mode="after")
    def _check(self) -> RegistryParams:
        for name in (
            "heartbeat_ttl_s",
            "heartbeat_interval_s",
            "nonce_ttl_s",
            "deregister_timeout_s",
        ):
            _positive(name, getattr(self, name))
        if not math.isfinite(self.max_future_skew_s) or self.max_future_skew_s < 0:
            raise ConfigError(
                f"invalid max_future_skew_s={self.max_future_skew_s}: must be finite and >= 0",
                reason="invalid_config",
                field="max_future_skew_s",
            )
        if not (0 <= self.principal_view_s <= self.heartbeat_interval_s):
            raise ConfigError(
                f"invalid principal_view_s={self.principal_view_s}: must be >= 0 and at most "
                f"heartbeat_interval_s={self.heartbeat_interval_s}",
                reason="invalid_config",
                field="principal_view_s",
            )
        if self.heartbeat_interval_s * 2 > self.heartbeat_ttl_s:
            raise ConfigError(
                f"invalid heartbeat_interval_s={self.heartbeat_interval_s}: must be at most half "
                f"of heartbeat_ttl_s={self.heartbeat_ttl_s}, so one lost beat is survivable",
                reason="invalid_config",
                field="heartbeat_interval_s",
            )
        return self


def _positive(name: str, value: float) -> None:
    """Refuse NaN, infinities, zero and negatives, naming the field."""
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"invalid {name}={value}: must be finite and > 0", reason="invalid_config", field=name
        )
