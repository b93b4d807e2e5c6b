"""The memory record: strict parsing, limits, versions, migration and faithful serialisation."""

from __future__ import annotations

import copy
import json
import math
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lamarck.errors import InvalidRecord, UnsupportedVersion
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits
from lamarck.proto.memory import (
    Context,
    Memory,
    MemoryV2,
    Provenance,
    Signature,
    estimate_std_dev,
    migrate_v1_to_v2,
    parse_memory,
)

NODE_A = "lmk1" + "a" * 32
NODE_B = "lmk1" + "b" * 32
TS = "2024-01-15T10:30:00Z"


def uid(n: int = 0) -> str:
    """A deterministic uuid4 string."""
    return str(uuid.UUID(int=n, version=4))


def record(**overrides: Any) -> dict[str, Any]:
    """A valid v1 memory as a JSON-shaped dict, with top-level overrides."""
    obj: dict[str, Any] = {
        "schema_version": "1.0",
        "id": uid(1),
        "type": "AC",
        "content": "Run pytest from the repo root, not tests/",
        "confidence": 0.75,
        "context": {
            "domain": "python",
            "environment": "ci",
            "tools": ["pytest"],
            "constraints": {"os": "linux"},
        },
        "provenance": {
            "source_agent_id": NODE_A,
            "source_type": "empirical",
            "created_at": TS,
            "updated_at": "2024-01-15T10:31:00.250000Z",
            "validation_count": 2,
            "contradiction_count": 0,
            "last_validated": TS,
        },
        "evidence": [
            {
                "type": "empirical",
                "description": "pytest from tests/ found no conftest; from root it passed",
                "timestamp": TS,
                "validator": "reality",
                "outcome_id": uid(2),
            }
        ],
        "validation": {"validated_by": [NODE_B], "contradicted_by": [], "consensus_level": 1.0},
        "metadata": {
            "success_count": 5,
            "failure_count": 1,
            "related_memories": [uid(3)],
            "superseded_by": None,
            "tags": ["pytest", "cwd"],
        },
        "lesson": {"operation": "shell:pytest", "scope": "global", "status": "active"},
    }
    obj.update(overrides)
    return obj


def with_path(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with ``value`` set at a dotted ``path`` (list indices allowed)."""
    out = copy.deepcopy(obj)
    node: Any = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def reason_of(obj: Any) -> str:
    """Parse ``obj`` (dict or raw) and return the ``InvalidRecord`` reason it is rejected with."""
    with pytest.raises(InvalidRecord) as info:
        if isinstance(obj, dict):
            Memory.from_obj(obj)
        else:
            Memory.from_json(obj)
    return info.value.reason


# --- round trips ----------------------------------------------------------------------------


def test_valid_record_parses_and_dumps_back_to_exactly_what_was_received() -> None:
    raw = record()
    m = Memory.from_obj(raw)
    assert m.to_obj() == raw
    assert json.loads(m.to_json()) == raw
    assert Memory.from_json(json.dumps(raw).encode()).to_obj() == raw


def test_explicit_null_and_absent_field_both_survive_a_round_trip() -> None:
    with_null = record(lesson=None)
    absent = record()
    del absent["lesson"]
    assert Memory.from_obj(with_null).to_obj() == with_null
    assert Memory.from_obj(absent).to_obj() == absent
    assert "lesson" not in Memory.from_obj(absent).to_obj()


def test_model_built_in_python_writes_only_what_was_given_plus_version() -> None:
    m = Memory(
        id=uid(9),
        type="UC",
        content="Tom prefers tabs",
        confidence=0.5,
        context=Context(domain="editor", environment="laptop"),
        provenance=Provenance(
            source_agent_id=NODE_A, source_type="inferred", created_at=TS, updated_at=TS
        ),
    )
    obj = m.to_obj()
    assert obj["schema_version"] == "1.0"
    assert set(obj) == {
        "schema_version",
        "id",
        "type",
        "content",
        "confidence",
        "context",
        "provenance",
    }
    assert Memory.from_obj(obj) == m


def test_signable_obj_is_to_obj_without_signature() -> None:
    sig = {"algorithm": "ed25519", "hash": "0" * 64, "signed_by": "key", "value": "sig"}
    m = Memory.from_obj(record(signature=sig))
    assert m.to_obj()["signature"] == sig
    assert m.signable_obj() == record()
    assert Memory.from_obj(record()).with_signature(Signature(**sig)) == m


def test_records_are_frozen_and_lists_are_tuples() -> None:
    m = Memory.from_obj(record())
    with pytest.raises(ValidationError):
        m.content = "changed"  # type: ignore[misc]
    assert isinstance(m.metadata.tags, tuple)
    assert isinstance(m.evidence, tuple)


# --- structure ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b'"a string"',
        b"\xff\xfe{}",
        b'\xef\xbb\xbf{"a": 1}',
        b'{"confidence": NaN}',
        b'{"confidence": 1e999}',
    ],
)
def test_bytes_that_are_not_one_strict_json_object_are_malformed(raw: bytes) -> None:
    assert reason_of(raw) == "malformed"


def test_duplicate_keys_are_rejected_because_parsers_disagree_on_them() -> None:
    text = json.dumps(record())
    raw = text[:-1] + ', "confidence": 0.1}'
    assert reason_of(raw) == "malformed"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("id", "not-a-uuid"),
        ("id", str(uuid.UUID(int=2**128 - 1, version=4)).upper()),
        # A version-1 UUID (time-based); a fixed one, so pytest-xdist workers collect one id.
        ("id", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
        ("type", "XX"),
        ("confidence", "0.5"),
        ("confidence", 1.5),
        ("confidence", -0.01),
        ("confidence", True),
        ("content", ""),
        ("content", "nul\x00byte"),
        ("content", "bell\x07"),
        ("context.tools", ["ok", ""]),
        ("context.constraints", {"k": 1}),
        ("provenance.source_agent_id", "agent-uuid"),
        ("provenance.source_agent_id", "LMK1" + "A" * 32),
        ("provenance.source_type", "rumour"),
        ("provenance.validation_count", -1),
        ("provenance.validation_count", 1.0),
        ("provenance.validation_count", True),
        ("provenance.validation_count", 2**53),
        ("evidence.0.validator", "someone"),
        ("evidence.0.outcome_id", "42"),
        ("evidence.0.type", "inferred"),
        ("validation.consensus_level", 2),
        ("metadata.superseded_by", "retired:Not Allowed"),
        ("metadata.tags", ["two\nlines"]),
        ("metadata.related_memories", ["mem-123"]),
        ("lesson.scope", "project:/home/tom/repo"),
        ("lesson.scope", "work"),
        ("lesson.status", "deleted"),
        ("lesson.version", 0),
        ("access_level", "secret"),
        ("signature", {"algorithm": "", "hash": "h", "signed_by": "k", "value": "v"}),
        ("signature", {"algorithm": "ed25519", "hash": "h", "signed_by": "k"}),
    ],
)
def test_any_malformed_field_is_rejected_as_invalid_record(path: str, value: Any) -> None:
    with pytest.raises(InvalidRecord):
        Memory.from_obj(with_path(record(), path, value))


@pytest.mark.parametrize(
    "block", ["", "context", "provenance", "evidence.0", "validation", "metadata", "lesson"]
)
def test_unknown_fields_are_rejected_in_every_block(block: str) -> None:
    obj = record()
    target: Any = obj
    for part in filter(None, block.split(".")):
        target = target[int(part)] if isinstance(target, list) else target[part]
    target["surprise"] = 1
    assert reason_of(obj) == "malformed"


def test_lone_surrogate_is_rejected() -> None:
    raw = json.dumps(record()).replace("Run pytest", "Run \\ud800pytest")
    assert reason_of(raw.encode()) == "malformed"


def test_from_obj_refuses_python_values_that_are_not_json() -> None:
    assert reason_of(record(content=datetime.now(UTC))) == "malformed"
    bad_keys = with_path(record(), "context.constraints", {1: "x"})
    assert reason_of(bad_keys) == "malformed"


def test_an_unknown_signature_algorithm_still_parses_so_verification_can_name_it() -> None:
    sig = {"algorithm": "rsa", "hash": "abc", "signed_by": "k" * 700, "value": "v" * 700}
    m = Memory.from_obj(record(signature=sig))
    assert m.signature is not None and m.signature.algorithm == "rsa"


def test_oversized_signature_string_is_rejected() -> None:
    sig = {"algorithm": "ed25519", "hash": "h", "signed_by": "k", "value": "v" * 1025}
    assert reason_of(record(signature=sig)) == "field_too_long"


# --- timestamps -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ts",
    [
        "2024-01-15T10:30:00+01:00",
        "2024-01-15T10:30:00+00:00",
        "2024-01-15T10:30:00",
        "2024-01-15T10:30:00z",
        "2024-01-15 10:30:00Z",
        "2024-01-15T10:30:00.5Z",
        "2024-01-15T10:30:00.000000Z",
        "2024-02-30T10:30:00Z",
        "2024-01-15T10:30:60Z",
        "yesterday",
        1705314600,
    ],
)
def test_timestamps_other_than_canonical_utc_are_bad_timestamp(ts: Any) -> None:
    assert reason_of(with_path(record(), "provenance.created_at", ts)) == "bad_timestamp"
    assert reason_of(with_path(record(), "evidence.0.timestamp", ts)) == "bad_timestamp"


def test_updated_before_created_is_bad_timestamp() -> None:
    obj = with_path(record(), "provenance.updated_at", "2024-01-15T10:29:59.999999Z")
    assert reason_of(obj) == "bad_timestamp"


# --- limits ---------------------------------------------------------------------------------


def test_content_limit_counts_utf8_bytes_not_characters() -> None:
    assert Memory.from_obj(record(content="é" * 2048))  # 4096 bytes
    assert reason_of(record(content="é" * 2048 + "x")) == "content_too_large"
    assert reason_of(record(content="x" * 4097)) == "content_too_large"


def test_evidence_limit_is_64() -> None:
    ev = record()["evidence"][0]
    assert len(Memory.from_obj(record(evidence=[ev] * 64)).evidence) == 64
    assert reason_of(record(evidence=[ev] * 65)) == "too_many_evidence"


def test_tag_limit_is_32() -> None:
    tags = [f"t{i}" for i in range(33)]
    assert Memory.from_obj(with_path(record(), "metadata.tags", tags[:32]))
    assert reason_of(with_path(record(), "metadata.tags", tags)) == "too_many_tags"


def test_whole_record_limit_applies_to_the_received_bytes() -> None:
    raw = json.dumps(record()).encode()
    padded = raw[:-1] + b" " * (65536 - len(raw)) + b"}"
    assert len(padded) == 65536
    assert Memory.from_json(padded)
    assert reason_of(padded[:-1] + b" }") == "too_large"


def test_whole_record_limit_applies_to_the_serialised_record() -> None:
    ev = dict(record()["evidence"][0], description="d" * 1024)
    # 64 evidence entries of ~1.2 KB each: every field within its own cap, the whole too big.
    assert reason_of(record(evidence=[ev] * 64)) == "too_large"


def test_a_node_can_configure_tighter_limits() -> None:
    tight = RecordLimits(max_tags=1)
    raw = json.dumps(record()).encode()
    with pytest.raises(InvalidRecord) as info:
        Memory.from_json(raw, limits=tight)
    assert info.value.reason == "too_many_tags"
    assert Memory.from_json(raw, limits=DEFAULT_LIMITS)


_LIMIT_PROBES: dict[str, tuple[str, Any, str]] = {
    # limit field -> (path, value builder taking the limit, expected reason)
    "max_content_bytes": ("content", lambda n: "x" * (n + 1), "content_too_large"),
    "max_evidence": (
        "evidence",
        lambda n: [record()["evidence"][0]] * (n + 1),
        "too_many_evidence",
    ),
    "max_tags": ("metadata.tags", lambda n: ["t"] * (n + 1), "too_many_tags"),
    "max_tag_chars": ("metadata.tags", lambda n: ["t" * (n + 1)], "field_too_long"),
    "max_short_chars": ("context.domain", lambda n: "d" * (n + 1), "field_too_long"),
    "max_description_chars": (
        "evidence.0.description",
        lambda n: "d" * (n + 1),
        "field_too_long",
    ),
    "max_list_items": ("context.tools", lambda n: ["t"] * (n + 1), "too_many_items"),
    "max_constraints": (
        "context.constraints",
        lambda n: {f"k{i}": "v" for i in range(n + 1)},
        "too_many_items",
    ),
}


_CHAR_CAPS = ("max_tag_chars", "max_short_chars", "max_description_chars", "max_content_bytes")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(sorted(_LIMIT_PROBES)),
    count=st.integers(min_value=2, max_value=40),
    chars=st.integers(min_value=60, max_value=200),
)
def test_exceeding_any_limit_by_one_raises_invalid_record(
    field: str, count: int, chars: int
) -> None:
    limit = chars if field in _CHAR_CAPS else count
    kwargs: dict[str, int] = {field: limit}
    # Keep the caps ordered (tag <= short <= description), as RecordLimits requires.
    if field == "max_short_chars":
        kwargs["max_tag_chars"] = min(64, limit)
    if field == "max_description_chars":
        kwargs["max_short_chars"] = limit
        kwargs["max_tag_chars"] = min(64, limit)
    limits = RecordLimits(**kwargs)
    path, build, reason = _LIMIT_PROBES[field]
    assert Memory.from_json(json.dumps(record()), limits=limits)
    obj = with_path(record(), path, build(limit))
    with pytest.raises(InvalidRecord) as info:
        Memory.from_json(json.dumps(obj), limits=limits)
    assert info.value.reason == reason


# --- extension blocks -----------------------------------------------------------------------


def test_active_lesson_without_outcome_evidence_is_a_claim_and_rejected() -> None:
    no_outcome = with_path(record(), "evidence.0.outcome_id", None)
    assert reason_of(no_outcome) == "missing_evidence"
    assert reason_of(record(evidence=[])) == "missing_evidence"
    claimed = with_path(record(evidence=[]), "lesson.status", "claimed")
    assert Memory.from_obj(claimed).lesson is not None


def test_project_scoped_lesson_names_a_digest() -> None:
    m = Memory.from_obj(with_path(record(), "lesson.scope", "project:" + "ab" * 32))
    assert m.lesson is not None and m.lesson.scope.startswith("project:")
    assert m.lesson.version == 1


def test_situation_block_round_trips_and_inferred_ones_carry_no_remedy() -> None:
    declared = {
        "tool": "gh",
        "subject": "github.com",
        "kind": "auth",
        "interactive": True,
        "env_fingerprint": "sha256:1234",
        "unblock": "gh auth login",
        "probe": "gh auth status",
        "source": "declared",
    }
    m = Memory.from_obj(record(situation=declared))
    assert m.situation is not None and m.situation.interactive
    inferred = dict(declared, source="inferred")
    assert reason_of(record(situation=inferred)) == "malformed"
    bare = dict(inferred, unblock=None, probe=None)
    assert Memory.from_obj(record(situation=bare)).situation is not None
    assert reason_of(record(situation=dict(declared, kind="vibes"))) == "malformed"


def test_private_memory_needs_recipients_and_others_must_not_have_them() -> None:
    assert Memory.from_obj(record(access_level="private", recipients=[NODE_B]))
    assert reason_of(record(access_level="private")) == "malformed"
    assert reason_of(record(access_level="public", recipients=[NODE_B])) == "malformed"


# --- versions and migration -----------------------------------------------------------------


def test_unknown_major_version_is_a_typed_error_never_a_guess() -> None:
    for version in ("3.0", "0.9", "10.0"):
        with pytest.raises(UnsupportedVersion) as info:
            parse_memory(record(schema_version=version))
        assert info.value.reason == "unsupported_version"
        assert isinstance(info.value, InvalidRecord)


@pytest.mark.parametrize("version", [None, 1.0, "1", "v1.0", "1.0.0", "01.0", ""])
def test_a_missing_or_garbled_version_is_malformed(version: Any) -> None:
    obj = record(schema_version=version)
    if version is None:
        del obj["schema_version"]
    with pytest.raises(InvalidRecord) as info:
        parse_memory(obj)
    assert info.value.reason == "malformed"


def test_a_minor_version_of_a_known_major_is_accepted_if_it_parses() -> None:
    assert parse_memory(record(schema_version="1.1")).schema_version == "2.0"
    assert Memory.from_obj(record(schema_version="1.7")).schema_version == "1.7"
    with pytest.raises(InvalidRecord):
        parse_memory(record(schema_version="1.1", new_field_from_1_1=True))


def test_memory_v1_reader_refuses_a_v2_record() -> None:
    v2 = parse_memory(record()).to_obj()
    with pytest.raises(UnsupportedVersion):
        Memory.from_obj(v2)
    assert MemoryV2.from_obj(v2).to_obj() == v2


def test_migration_adds_a_confidence_interval_and_invents_nothing_else() -> None:
    v1 = Memory.from_obj(record())
    v2 = migrate_v1_to_v2(v1)
    obj = v2.to_obj()
    assert obj["schema_version"] == "2.0"
    assert obj["confidence_interval"] == {"mean": 0.75, "std_dev": estimate_std_dev(5, 1)}
    assert "causal_links" not in obj and "decay_function" not in obj
    assert {k: v for k, v in obj.items() if k not in ("schema_version", "confidence_interval")} == {
        k: v for k, v in record().items() if k != "schema_version"
    }
    assert parse_memory(v1) == v2
    assert parse_memory(json.dumps(record()).encode()) == v2
    assert parse_memory(v2) is v2


def test_migration_keeps_the_signature_of_the_original_bytes() -> None:
    sig = {"algorithm": "ed25519", "hash": "0" * 64, "signed_by": "k", "value": "v"}
    v2 = parse_memory(record(signature=sig))
    assert v2.signature is not None and v2.signature.to_obj() == sig


def test_a_v1_record_at_the_size_limit_still_migrates() -> None:
    ev = record()["evidence"][0]
    obj = record(evidence=[dict(ev, description="d" * 800) for _ in range(64)])
    size = len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())
    # Grow descriptions so that the compact record is a few bytes under the limit.
    grow = 65532 - size
    assert grow > 0
    for entry in obj["evidence"]:
        step = min(grow, 224)
        entry["description"] += "d" * step
        grow -= step
    assert grow == 0
    v1 = Memory.from_obj(obj)
    assert len(v1.to_json()) == 65532
    v2 = migrate_v1_to_v2(v1)
    assert len(v2.to_json()) > 65536
    assert v2.schema_version == "2.0"


def test_std_dev_estimate_shrinks_with_observations_and_stays_in_range() -> None:
    assert estimate_std_dev(0, 0) == pytest.approx(math.sqrt(1 / 12), abs=1e-6)
    assert estimate_std_dev(100, 100) < estimate_std_dev(5, 5) < estimate_std_dev(0, 0)
    assert 0 <= estimate_std_dev(2**53 - 1, 0) <= 0.5


def test_v2_fields_are_validated() -> None:
    base = parse_memory(record()).to_obj()
    good = dict(
        base,
        causal_links=[{"target": uid(5), "relation": "causes", "strength": 0.4}],
        decay_function={"kind": "exponential", "half_life_days": 30},
    )
    assert MemoryV2.from_obj(good).to_obj() == good
    for path, value in [
        ("confidence_interval.std_dev", 0.6),
        ("confidence_interval.mean", 1.2),
        ("causal_links.0.relation", "correlates"),
        ("causal_links.0.target", "mem-1"),
        ("decay_function.half_life_days", 0),
        ("decay_function.kind", "none"),
    ]:
        with pytest.raises(InvalidRecord):
            MemoryV2.from_obj(with_path(good, path, value))
    no_interval = dict(base)
    del no_interval["confidence_interval"]
    with pytest.raises(InvalidRecord):
        MemoryV2.from_obj(no_interval)


# --- properties -----------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_categories=["Cc", "Cs"]), min_size=1, max_size=40)
_ts = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.isoformat().replace("+00:00", "Z"))


@st.composite
def memories(draw: st.DrawFn) -> dict[str, Any]:
    """Valid v1 memory objects with varied optional parts."""
    from lamarck.proto.timefmt import format_ts, parse_ts

    created = draw(_ts)
    created = format_ts(parse_ts(created))
    obj = record(
        id=str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1)), version=4)),
        type=draw(st.sampled_from(["UC", "AC"])),
        content=draw(_text),
        confidence=draw(st.floats(0, 1)),
    )
    obj = with_path(obj, "provenance.created_at", created)
    obj = with_path(obj, "provenance.updated_at", created)
    obj = with_path(obj, "metadata.tags", draw(st.lists(_text.map(lambda s: s[:64]), max_size=5)))
    obj = with_path(obj, "context.constraints", draw(st.dictionaries(_text, _text, max_size=3)))
    for block in ("validation", "metadata"):
        if draw(st.booleans()):
            del obj[block]
    lesson = draw(st.sampled_from(["keep", "drop", "null", "claimed"]))
    if lesson == "drop":
        del obj["lesson"]
    elif lesson == "null":
        obj["lesson"] = None
    elif lesson == "claimed":
        obj = with_path(obj, "lesson.status", "claimed")
        del obj["evidence"]
    return obj


@settings(max_examples=150, deadline=None)
@given(obj=memories())
def test_dump_of_parse_is_faithful_and_stable(obj: dict[str, Any]) -> None:
    first = Memory.from_obj(obj)
    dumped = first.to_obj()
    assert dumped == obj
    second = Memory.from_json(first.to_json())
    assert second.to_obj() == dumped
    assert second == first
    v2 = parse_memory(obj)
    assert parse_memory(v2.to_obj()).to_obj() == v2.to_obj()


def test_records_hash_consistently_with_equality_despite_the_constraints_dict() -> None:
    a = Memory.from_obj(with_path(record(), "context.constraints", {"a": "1", "b": "2"}))
    b = Memory.from_obj(with_path(record(), "context.constraints", {"b": "2", "a": "1"}))
    assert a == b and hash(a) == hash(b)
    assert len({a, b, Memory.from_obj(record())}) == 2


def test_migrate_takes_only_a_v1_model() -> None:
    v2 = parse_memory(record())
    with pytest.raises(InvalidRecord):
        migrate_v1_to_v2(v2)  # type: ignore[arg-type]
