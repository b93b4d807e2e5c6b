"""The memory record: the Knowledge Interchange Standard (v1.0 and v2.0) plus lamarck's blocks.

A memory is what nodes sign, gossip and import. The models here are strict (no coercion),
frozen and closed (``extra="forbid"``); ``from_json``/``from_obj`` turn *every* failure into
``InvalidRecord`` with a machine-readable reason, so an invalid record cannot exist as an
object. Limits (``RecordLimits``) are checked while parsing.

Where lamarck's additions live (documented in the JSON Schema too):

* ``lesson`` — an optional top-level extension block {operation, scope, status, version}
  (adaptive memory §3.3). The outcome ids that prove a lesson are ``evidence[].outcome_id``.
* ``situation`` — an optional top-level extension block (adaptive recovery §3.4).
* ``access_level``/``recipients`` — the seed's publisher envelope, kept inside the record so
  that they are covered by the signature.

Serialisation policy (``to_obj``): *faithful*. A field is written iff the record carries it:
absent on the wire stays absent, an explicit ``null`` stays ``null``, and a model built in
Python writes exactly the fields passed to it (plus ``schema_version``, always written). So
``canonical(to_obj(parse(raw))) == canonical(raw)`` for every accepted ``raw`` and a
re-serialisation never breaks a signature. Neither ``exclude_none`` nor ``exclude_defaults``
is applied: both would drop bytes the signer signed.

Shared building blocks (field types, ``Signature``, the ``RecordModel`` base with its parse
discipline) live here too and are reused by ``outcome.py`` and ``vote.py``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from lamarck.errors import InvalidRecord, UnsupportedVersion
from lamarck.proto.limits import DEFAULT_LIMITS, MAX_SAFE_INT, RecordLimits, check_depth
from lamarck.proto.timefmt import CANONICAL_TS_PATTERN, format_ts, parse_ts

__all__ = [
    "NODE_ID_PATTERN",
    "SHA256_HEX_PATTERN",
    "UUID4_PATTERN",
    "AccessLevel",
    "AnyMemory",
    "CausalLink",
    "ConfidenceInterval",
    "Context",
    "Count",
    "DecayFunction",
    "Evidence",
    "Lesson",
    "Memory",
    "MemoryV2",
    "Metadata",
    "NodeId",
    "Probability",
    "Provenance",
    "RecordBlock",
    "RecordModel",
    "Sha256Hex",
    "Signature",
    "Situation",
    "Timestamp",
    "Uuid4",
    "Validation",
    "capped_text",
    "estimate_std_dev",
    "load_json_object",
    "max_items",
    "migrate_v1_to_v2",
    "parse_memory",
    "schema_major",
]

# --------------------------------------------------------------------------------------------
# Patterns. Character classes are spelled out: in the Rust regex engine pydantic uses, ``\d``
# and ``\w`` are Unicode-aware and would admit e.g. Arabic-Indic digits.

#: A uuid4 in its canonical lower-case hyphenated spelling (one spelling per id).
UUID4_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
#: A node id: ``lmk1`` + 32 lower-case base32 characters (160 bits of sha256 of the key).
NODE_ID_PATTERN = r"^lmk1[a-z2-7]{32}$"
#: A sha256 digest in lower-case hex.
SHA256_HEX_PATTERN = r"^[0-9a-f]{64}$"
# A project digest (never a path: paths are user data). 16..64 hex: from a 64-bit prefix up to
# a full sha256, so the digest scheme can choose without a schema change.
_SCOPE_PATTERN = r"^(global|project:[0-9a-f]{16,64})$"
_SUPERSEDED_PATTERN = (
    r"^([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    r"|retired:[a-z0-9_-]{0,64})$"
)
_VERSION_RE = re.compile(r"(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})", re.ASCII)


# --------------------------------------------------------------------------------------------
# Validation helpers. Limits reach the validators through the validation context, so one model
# serves any configured ``RecordLimits``; without a context the defaults apply.


def _limits(info: ValidationInfo) -> RecordLimits:
    ctx = info.context
    if isinstance(ctx, Mapping):
        lim = ctx.get("limits")
        if isinstance(lim, RecordLimits):
            return lim
    return DEFAULT_LIMITS


# Unicode category Cc is exactly U+0000-U+001F and U+007F-U+009F; a regex beats a per-char
# unicodedata loop on 4 KiB of content.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_EXCEPT_NL_TAB = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _check_text(value: str, *, multiline: bool) -> None:
    # NUL cannot be stored in Postgres text, and a lone surrogate cannot be encoded to UTF-8
    # (so it could never be canonicalised or signed): both are malformed, not "cleaned".
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text is not valid Unicode (lone surrogate)") from None
    # Control characters in one-line fields are log/prompt injection vectors.
    bad = (_CONTROL_EXCEPT_NL_TAB if multiline else _CONTROL).search(value)
    if bad is not None:
        raise ValueError(f"control character U+{ord(bad.group()):04X} not allowed here")


def capped_text(
    cap: str, *, multiline: bool = False, in_bytes: bool = False, reason: str = "field_too_long"
) -> Callable[[str, ValidationInfo], str]:
    """Build a validator checking a string against ``RecordLimits.<cap>``."""

    def check(value: str, info: ValidationInfo) -> str:
        _check_text(value, multiline=multiline)
        limit: int = getattr(_limits(info), cap)
        size = len(value.encode("utf-8")) if in_bytes else len(value)
        if size > limit:
            unit = "bytes" if in_bytes else "characters"
            raise InvalidRecord(
                f"{info.field_name}: {size} {unit} exceeds {cap}={limit}",
                reason=reason,
                field=info.field_name,
                size=size,
                limit=limit,
            )
        return value

    return check


def max_items(
    cap: str, reason: str = "too_many_items"
) -> Callable[[tuple[Any, ...], ValidationInfo], tuple[Any, ...]]:
    """Build a validator checking a list's length against ``RecordLimits.<cap>``."""

    def check(value: tuple[Any, ...], info: ValidationInfo) -> tuple[Any, ...]:
        limit: int = getattr(_limits(info), cap)
        if len(value) > limit:
            raise InvalidRecord(
                f"{info.field_name}: {len(value)} entries exceeds {cap}={limit}",
                reason=reason,
                field=info.field_name,
                size=len(value),
                limit=limit,
            )
        return value

    return check


def _check_ts(value: object) -> object:
    # Runs before the str check so that *any* bad timestamp (wrong type included) gets the
    # specific reason. Only the canonical spelling is accepted: one instant, one byte string.
    if not isinstance(value, str):
        raise InvalidRecord("timestamp must be a string", reason="bad_timestamp")
    if format_ts(parse_ts(value)) != value:
        raise InvalidRecord(
            "timestamp not in canonical form YYYY-MM-DDTHH:MM:SS[.ffffff]Z "
            "(six fraction digits, only when non-zero)",
            reason="bad_timestamp",
            value=value[:40],
        )
    return value


def _check_validator_id(value: str) -> str:
    if value != "reality" and re.fullmatch(NODE_ID_PATTERN, value, re.ASCII) is None:
        raise ValueError("validator must be a node id or 'reality'")
    return value


# --------------------------------------------------------------------------------------------
# Field types.

#: A canonical RFC 3339 UTC timestamp string (``timefmt.format_ts`` spelling).
Timestamp = Annotated[
    str, StringConstraints(pattern=CANONICAL_TS_PATTERN), BeforeValidator(_check_ts)
]
#: A uuid4 string in canonical lower-case form.
Uuid4 = Annotated[str, StringConstraints(pattern=UUID4_PATTERN)]
#: A node id derived from a public key (see ``identity.node_id_for``).
NodeId = Annotated[str, StringConstraints(pattern=NODE_ID_PATTERN)]
#: A lower-case hex sha256 digest.
Sha256Hex = Annotated[str, StringConstraints(pattern=SHA256_HEX_PATTERN)]
#: A finite float in [0, 1].
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
#: A non-negative integer that survives canonical JSON exactly.
Count = Annotated[int, Field(ge=0, le=MAX_SAFE_INT)]

_ShortText = Annotated[str, Field(min_length=1), AfterValidator(capped_text("max_short_chars"))]
_MaybeEmptyShort = Annotated[str, AfterValidator(capped_text("max_short_chars"))]
_LongText = Annotated[
    str, Field(min_length=1), AfterValidator(capped_text("max_description_chars", multiline=True))
]
_Tag = Annotated[str, Field(min_length=1), AfterValidator(capped_text("max_tag_chars"))]
_SigText = Annotated[str, Field(min_length=1), AfterValidator(capped_text("max_signature_chars"))]
_Content = Annotated[
    str,
    Field(min_length=1),
    AfterValidator(
        capped_text("max_content_bytes", multiline=True, in_bytes=True, reason="content_too_large")
    ),
]
_ValidatorId = Annotated[str, AfterValidator(_check_validator_id)]

#: Who may read a memory.
AccessLevel = Literal["public", "trusted", "private"]


# --------------------------------------------------------------------------------------------
# JSON gate and version reading (shared by every record kind).


def _reject_constant(name: str) -> Any:
    raise InvalidRecord(f"non-finite number {name} is not JSON", reason="malformed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidRecord("number overflows a double", reason="malformed")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two parsers that pick different duplicates see different records under one signature.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidRecord(f"duplicate key {key[:40]!r}", reason="malformed")
        out[key] = value
    return out


def load_json_object(
    raw: bytes | bytearray | str, *, limits: RecordLimits = DEFAULT_LIMITS
) -> tuple[str, dict[str, Any]]:
    """Decode untrusted record bytes: size limit, strict UTF-8, strict JSON, one object.

    Returns the text and the parsed object. Rejects (``InvalidRecord``) oversized input
    (``too_large``), duplicate keys, NaN/Infinity, non-object roots (``malformed``).
    """
    if isinstance(raw, str):
        try:
            data = raw.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRecord("record text is not valid Unicode", reason="malformed") from None
    elif isinstance(raw, bytes | bytearray):
        data = bytes(raw)
    else:
        raise InvalidRecord(f"record must be bytes or str, not {type(raw).__name__}")
    # Size first: never spend parsing effort on something we will refuse anyway.
    if len(data) > limits.max_record_bytes:
        raise InvalidRecord(
            f"record is {len(data)} bytes, limit {limits.max_record_bytes}",
            reason="too_large",
            size=len(data),
            limit=limits.max_record_bytes,
        )
    check_depth(data, limits)
    try:
        text = data.decode("utf-8")
        obj = json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except InvalidRecord:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidRecord(f"not valid UTF-8 JSON: {exc}"[:200], reason="malformed") from None
    if not isinstance(obj, dict):
        raise InvalidRecord("record must be a JSON object", reason="malformed")
    return text, obj


def _dump_obj(obj: object) -> str:
    if not isinstance(obj, Mapping):
        raise InvalidRecord(f"record must be a mapping, not {type(obj).__name__}")
    _check_keys(obj)
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidRecord(f"record is not JSON-shaped: {exc}"[:200]) from None


def _check_keys(obj: object, depth: int = 0) -> None:
    # json.dumps would silently turn a key 1 into "1"; a record built in Python must already
    # be what it will be on the wire.
    if depth > 64:
        raise InvalidRecord("record nested too deeply")
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            if not isinstance(key, str):
                raise InvalidRecord(f"object key {key!r} is not a string")
            _check_keys(value, depth + 1)
    elif isinstance(obj, list | tuple):
        for value in obj:
            _check_keys(value, depth + 1)


def schema_major(obj: Mapping[str, Any]) -> int:
    """Return the major number of ``obj["schema_version"]`` (``"MAJOR.MINOR"``).

    Raises ``InvalidRecord`` (``malformed``) if the field is missing or not of that form.
    """
    version = obj.get("schema_version")
    if not isinstance(version, str):
        raise InvalidRecord("schema_version missing or not a string", reason="malformed")
    m = _VERSION_RE.fullmatch(version)
    if m is None:
        raise InvalidRecord(f"schema_version {version[:16]!r} is not MAJOR.MINOR")
    return int(m.group(1))


def _reason_for(exc: ValidationError) -> InvalidRecord:
    errors = exc.errors(include_url=False, include_input=False)
    summary = [{"loc": ".".join(str(p) for p in e["loc"]), "type": e["type"]} for e in errors[:5]]
    first = errors[0] if errors else None
    message = f"{summary[0]['loc'] or '<record>'}: {first['msg']}" if first else "validation failed"
    return InvalidRecord(message[:300], reason="malformed", errors=summary, count=len(errors))


# --------------------------------------------------------------------------------------------
# Base classes.


class RecordBlock(BaseModel):
    """A strict, frozen, closed part of a record."""

    model_config = ConfigDict(
        strict=True,
        frozen=True,
        extra="forbid",
        allow_inf_nan=False,
        # Inputs may be hostile and large; never echo them into error messages or logs.
        hide_input_in_errors=True,
    )

    def __hash__(self) -> int:
        # pydantic's frozen hash fails on the dict in ``context.constraints``; hash the sorted
        # JSON instead, which agrees with ``==`` (equal field values, equal sorted JSON).
        return hash(json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False))


class RecordModel(RecordBlock):
    """Base of every top-level record: the parse discipline and the faithful dump.

    Subclasses set ``_majors`` (the schema major versions they read) and may list fields in
    ``_always_written`` that are written even when the caller left them at their default.
    """

    _majors: ClassVar[tuple[int, ...]] = (1,)
    _always_written: ClassVar[tuple[str, ...]] = ("schema_version",)

    @classmethod
    def from_json(
        cls, raw: bytes | bytearray | str, *, limits: RecordLimits = DEFAULT_LIMITS
    ) -> Self:
        """Parse untrusted JSON bytes or text; raise ``InvalidRecord`` on any failure."""
        text, obj = load_json_object(raw, limits=limits)
        return cls._from_checked(text, obj, limits=limits)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any], *, limits: RecordLimits = DEFAULT_LIMITS) -> Self:
        """Parse a JSON-shaped mapping; raise ``InvalidRecord`` on any failure.

        The mapping goes through the same JSON gate as received bytes (so the size limit
        applies to its compact serialisation), which is what makes both paths agree.
        """
        return cls.from_json(_dump_obj(obj), limits=limits)

    @classmethod
    def _from_checked(
        cls,
        text: str,
        obj: Mapping[str, Any],
        *,
        limits: RecordLimits,
    ) -> Self:
        major = schema_major(obj)
        if major not in cls._majors:
            raise UnsupportedVersion(
                f"{cls.__name__} reads schema major {cls._majors}, record is "
                f"{obj.get('schema_version')!r}",
                major=major,
            )
        context = {"limits": limits}
        try:
            return cls.model_validate_json(text, strict=True, context=context)
        except ValidationError as exc:
            raise _reason_for(exc) from None
        except InvalidRecord:
            raise
        except (ValueError, TypeError, RecursionError) as exc:  # defensive: never leak others
            raise InvalidRecord(f"record rejected: {exc}"[:200]) from None

    @model_validator(mode="after")
    def _check_record(self, info: ValidationInfo) -> Self:
        # Faithful dump, but the version (and kind) must always be on the wire.
        self.__pydantic_fields_set__.update(self._always_written)
        limits = _limits(info)
        size = len(self.to_json())
        if size > limits.max_record_bytes:
            raise InvalidRecord(
                f"record is {size} bytes serialised, limit {limits.max_record_bytes}",
                reason="too_large",
                size=size,
                limit=limits.max_record_bytes,
            )
        return self

    def to_obj(self) -> dict[str, Any]:
        """The record as a JSON-mode dict, written faithfully (see the module docstring)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> bytes:
        """Compact UTF-8 JSON of ``to_obj()`` (not canonical: use ``canonical.py`` to sign)."""
        return self.model_dump_json(exclude_unset=True).encode("utf-8")

    def signable_obj(self) -> dict[str, Any]:
        """``to_obj()`` without the ``signature`` block: what the signing input is built from."""
        obj = self.to_obj()
        obj.pop("signature", None)
        return obj

    def with_signature(
        self, signature: Signature | Mapping[str, Any], *, limits: RecordLimits = DEFAULT_LIMITS
    ) -> Self:
        """Return a validated copy carrying ``signature`` (replacing any previous one)."""
        sig = signature.to_obj() if isinstance(signature, Signature) else dict(signature)
        return type(self).from_obj({**self.signable_obj(), "signature": sig}, limits=limits)


# --------------------------------------------------------------------------------------------
# Blocks of the memory record.


class Signature(RecordBlock):
    """The signature block: {algorithm, hash, signed_by, value}, all strings.

    Only shape is checked here; ``signing.verify_object`` decides whether the algorithm is
    known ("ed25519") and whether the signature holds, so an unknown algorithm still parses and
    is then refused with ``unknown_algorithm``.
    """

    algorithm: _SigText
    hash: _SigText = Field(description="sha256 hex of the signing input")
    signed_by: _SigText = Field(description="the signer's public key, base64url, no padding")
    value: _SigText = Field(description="the signature, base64url, no padding")

    def to_obj(self) -> dict[str, Any]:
        """The block as a JSON-mode dict."""
        return self.model_dump(mode="json")


class Context(RecordBlock):
    """Where a memory applies: domain, environment, tools, constraints (+ scale/timing/users)."""

    domain: _MaybeEmptyShort
    environment: _MaybeEmptyShort
    tools: Annotated[tuple[_ShortText, ...], AfterValidator(max_items("max_list_items"))] = ()
    constraints: Annotated[
        dict[_ShortText, _MaybeEmptyShort], AfterValidator(max_items("max_constraints"))
    ] = Field(default_factory=dict, description="string keys to string values")
    scale: _ShortText | None = Field(default=None, description='e.g. "< 1000 requests/day"')
    timing: _ShortText | None = Field(default=None, description='e.g. "rate-limited"')
    users: _ShortText | None = Field(default=None, description='e.g. "development team"')


class Provenance(RecordBlock):
    """Who produced a memory, how, and when. Counts here are claims, never evidence."""

    source_agent_id: NodeId = Field(description="must equal node_id_for(signature.signed_by)")
    source_type: Literal["empirical", "collaborative", "documentary", "inferred"]
    created_at: Timestamp
    updated_at: Timestamp
    validation_count: Count = 0
    contradiction_count: Count = 0
    last_validated: Timestamp | None = None

    @model_validator(mode="after")
    def _updated_not_before_created(self) -> Self:
        if parse_ts(self.updated_at) < parse_ts(self.created_at):
            raise InvalidRecord("updated_at is before created_at", reason="bad_timestamp")
        return self


class Evidence(RecordBlock):
    """One piece of evidence; ``outcome_id`` names the outcome record that proves a lesson."""

    type: Literal["empirical", "collaborative", "documentary"]
    description: _LongText
    timestamp: Timestamp
    validator: _ValidatorId = Field(description="a node id, or 'reality' for an outcome")
    outcome_id: Uuid4 | None = None


class Validation(RecordBlock):
    """Who confirmed or contradicted a memory; self-reported, so never raises confidence."""

    validated_by: Annotated[tuple[NodeId, ...], AfterValidator(max_items("max_list_items"))] = ()
    contradicted_by: Annotated[tuple[NodeId, ...], AfterValidator(max_items("max_list_items"))] = ()
    consensus_level: Probability = 0.0


class Metadata(RecordBlock):
    """Counts, lineage and tags."""

    success_count: Count = 0
    failure_count: Count = 0
    related_memories: Annotated[tuple[Uuid4, ...], AfterValidator(max_items("max_list_items"))] = ()
    superseded_by: Annotated[str, StringConstraints(pattern=_SUPERSEDED_PATTERN)] | None = Field(
        default=None, description="the successor's id, or 'retired:<who>' (e.g. retired:user)"
    )
    supersedes: Uuid4 | None = Field(
        default=None,
        description="the id of the signer's own record this one is an edit of (its successor)",
    )
    tags: Annotated[tuple[_Tag, ...], AfterValidator(max_items("max_tags", "too_many_tags"))] = ()


class Lesson(RecordBlock):
    """lamarck extension block: what a lesson is about and where it stands (design sources: adaptive
    memory)."""

    operation: _ShortText = Field(description="the operation key the lesson is about")
    scope: Annotated[str, StringConstraints(pattern=_SCOPE_PATTERN)] = Field(
        description='"global" or "project:<hex digest>" (a digest, never a path)'
    )
    status: Literal["claimed", "active", "superseded", "retired"]
    version: Annotated[int, Field(ge=1, le=MAX_SAFE_INT)] = Field(
        default=1, description="bumps on each edit of the same id"
    )
    reason: _LongText | None = Field(
        default=None,
        description="why its source made this version: an edit's or a retirement's reason",
    )


#: Situation kinds named by adaptive recovery §3.2 (declared or inferred by the classifier).
SituationKind = Literal[
    "auth", "permission", "not_installed", "quota", "network", "empty", "truncated"
]


class Situation(RecordBlock):
    """lamarck extension block: a remembered blocker (design sources: adaptive recovery).

    ``unblock`` and ``probe`` come only from tool code, so an inferred situation carries
    neither (design sources: adaptive recovery); that rule is checked here.
    """

    tool: _ShortText
    subject: _ShortText
    kind: SituationKind
    interactive: bool = False
    env_fingerprint: _ShortText | None = None
    unblock: _LongText | None = None
    probe: _LongText | None = None
    source: Literal["declared", "inferred"]

    @model_validator(mode="after")
    def _inferred_has_no_remedy(self) -> Self:
        if self.source == "inferred" and (self.unblock is not None or self.probe is not None):
            raise InvalidRecord(
                "an inferred situation carries no unblock and no probe", reason="malformed"
            )
        return self


class ConfidenceInterval(RecordBlock):
    """v2: the confidence as a distribution: mean and standard deviation."""

    mean: Probability
    # 0.5 is the largest standard deviation any distribution on [0, 1] can have.
    std_dev: Annotated[float, Field(ge=0.0, le=0.5)]


class CausalLink(RecordBlock):
    """v2: a directed dependency from this memory to another."""

    target: Uuid4
    relation: Literal["causes", "enables", "prevents", "requires", "contradicts"]
    strength: Probability


class DecayFunction(RecordBlock):
    """v2: how confidence fades with time unused.

    ``exponential``: c(t) = c0 * 2^(-t / half_life). ``linear``: c(t) = c0 * max(0, 1 - t /
    (2 * half_life)). An absent block means the record declares no decay; the importing node
    applies its own policy.
    """

    kind: Literal["exponential", "linear"]
    half_life_days: Annotated[float, Field(gt=0.0, le=36500.0)]


# --------------------------------------------------------------------------------------------
# The records.


class _MemoryBase(RecordModel):
    """Fields common to every memory version."""

    schema_version: str
    id: Uuid4
    type: Literal["UC", "AC"] = Field(description="UC: user context; AC: agent capability")
    content: _Content
    confidence: Probability
    access_level: AccessLevel = "public"
    recipients: Annotated[tuple[NodeId, ...], AfterValidator(max_items("max_list_items"))] = Field(
        default=(), description="node ids allowed to read a private memory"
    )
    context: Context
    provenance: Provenance
    evidence: Annotated[
        tuple[Evidence, ...], AfterValidator(max_items("max_evidence", "too_many_evidence"))
    ] = ()
    validation: Validation = Field(default_factory=Validation)
    metadata: Metadata = Field(default_factory=Metadata)
    lesson: Lesson | None = Field(
        default=None, description="lamarck extension: present iff the memory is a lesson"
    )
    situation: Situation | None = Field(
        default=None, description="lamarck extension: present iff the memory is a blocker"
    )
    signature: Signature | None = Field(
        default=None, description="absent before signing; verified by signing.verify_object"
    )

    @model_validator(mode="after")
    def _check_memory(self) -> Self:
        if self.access_level == "private" and not self.recipients:
            raise InvalidRecord("a private memory must name its recipients", reason="malformed")
        if self.access_level != "private" and self.recipients:
            raise InvalidRecord("recipients are only meaningful when private", reason="malformed")
        # Adaptive memory §3.3/§5: an active lesson without an outcome behind it is a claim.
        if (
            self.lesson is not None
            and self.lesson.status == "active"
            and not any(e.outcome_id for e in self.evidence)
        ):
            raise InvalidRecord(
                "an active lesson needs evidence naming at least one outcome id",
                reason="missing_evidence",
            )
        return self


class Memory(_MemoryBase):
    """A memory record, schema 1.x (the Knowledge Interchange Standard v1.0 + lamarck blocks)."""

    _majors: ClassVar[tuple[int, ...]] = (1,)

    schema_version: Annotated[str, StringConstraints(pattern=r"^1\.(0|[1-9][0-9]{0,3})$")] = "1.0"


class MemoryV2(_MemoryBase):
    """A memory record, schema 2.x: v1 plus confidence interval, causal links and decay."""

    _majors: ClassVar[tuple[int, ...]] = (2,)

    schema_version: Annotated[str, StringConstraints(pattern=r"^2\.(0|[1-9][0-9]{0,3})$")] = "2.0"
    confidence_interval: ConfidenceInterval
    causal_links: Annotated[
        tuple[CausalLink, ...], AfterValidator(max_items("max_list_items"))
    ] = ()
    decay_function: DecayFunction | None = None


#: Either memory version.
AnyMemory = Memory | MemoryV2


# --------------------------------------------------------------------------------------------
# Migration and the version-dispatching reader.


def estimate_std_dev(success_count: int, failure_count: int) -> float:
    """Standard deviation of Beta(successes + 1, failures + 1), rounded to 6 places.

    The uniform-prior posterior of a success rate: 0.288675 with no observations, shrinking as
    counts grow. The counts are the source's own claims, so this describes the record, it is
    not evidence for it.
    """
    a = float(success_count) + 1.0
    b = float(failure_count) + 1.0
    n = a + b
    return round(math.sqrt(a * b / (n * n * (n + 1.0))), 6)


def migrate_v1_to_v2(v1: Memory) -> MemoryV2:
    """Lift a v1 memory to v2: ``confidence_interval`` = {confidence, Beta std-dev}.

    v1 carries no causal or decay information, so none is invented: ``causal_links`` and
    ``decay_function`` stay absent (``related_memories`` are associations, not causes). The
    ``signature`` block is kept as it was: it signs the *original v1 bytes*, which is what
    verification must use (``SignedMemory`` keeps them); the migrated object is a view, and
    may exceed ``max_record_bytes`` by the size of the added block (~60 bytes).
    """
    if not isinstance(v1, Memory):
        raise InvalidRecord(f"migrate_v1_to_v2 takes a Memory, not {type(v1).__name__}")
    interval = ConfidenceInterval(
        mean=v1.confidence,
        std_dev=estimate_std_dev(v1.metadata.success_count, v1.metadata.failure_count),
    )
    # Every part of ``v1`` is already validated and the blocks are the same classes in both
    # versions, so the v2 object is assembled without a second parse (parse_memory's hot path).
    # Only the whole-record size may exceed the limit, by the few bytes of the new block.
    values: dict[str, Any] = {name: getattr(v1, name) for name in Memory.model_fields}
    values.update(schema_version="2.0", confidence_interval=interval)
    fields_set = set(v1.model_fields_set) | {"schema_version", "confidence_interval"}
    return MemoryV2.model_construct(_fields_set=fields_set, **values)


def parse_memory(
    data: bytes | bytearray | str | Mapping[str, Any] | Memory | MemoryV2,
    *,
    limits: RecordLimits = DEFAULT_LIMITS,
) -> MemoryV2:
    """Read a memory of any known version and return it as v2.

    Major 1 is parsed as ``Memory`` and migrated; major 2 is parsed as ``MemoryV2``; any
    other major raises ``UnsupportedVersion`` (never a guess). Minor versions of a known major
    are accepted if they parse under that major's model.
    """
    if isinstance(data, MemoryV2):
        return data
    if isinstance(data, Memory):
        return migrate_v1_to_v2(data)
    if isinstance(data, Mapping):
        text = _dump_obj(data)
        text, obj = load_json_object(text, limits=limits)
    else:
        text, obj = load_json_object(data, limits=limits)
    major = schema_major(obj)
    if major == 1:
        return migrate_v1_to_v2(Memory._from_checked(text, obj, limits=limits))
    if major == 2:
        return MemoryV2._from_checked(text, obj, limits=limits)
    raise UnsupportedVersion(
        f"memory schema_version {obj.get('schema_version')!r} has an unknown major",
        major=major,
    )
