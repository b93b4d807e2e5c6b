"""JSON Schemas of the interchange records, generated from the models (never hand-kept).

``json_schema("memory")`` is the schema of what a *reader* accepts: either a v1.x or a v2.x
record (every reader migrates v1 to v2), with lamarck's ``lesson`` and ``situation``
extension blocks documented where they live. Limits that depend on configuration are
published under ``x-lamarck-limits`` with their default values; a few checks cannot be
expressed in JSON Schema (UTF-8 byte lengths, cross-field rules) and are listed under
``x-lamarck-rules``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from lamarck.errors import InvalidRecord
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits
from lamarck.proto.memory import Memory, MemoryV2
from lamarck.proto.outcome import Outcome
from lamarck.proto.vote import Vote

__all__ = ["SCHEMA_KINDS", "SchemaKind", "json_schema"]

#: The record kinds that have a published schema.
SchemaKind = Literal["memory", "outcome", "vote"]
SCHEMA_KINDS: tuple[SchemaKind, ...] = ("memory", "outcome", "vote")

_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_COMMON_RULES = [
    "The serialized record is at most max_record_bytes UTF-8 bytes.",
    "No duplicate object keys; no NaN or Infinity; integers within +-(2**53 - 1).",
    "Timestamps are RFC 3339 UTC in one spelling: YYYY-MM-DDTHH:MM:SS[.ffffff]Z, six fraction "
    "digits present only when the microseconds are non-zero.",
    "Strings carry no NUL, no lone surrogate, and (outside content, descriptions, goal_digest, "
    "unblock and probe) no control characters.",
    "signature is absent before signing; it covers every other field: "
    "b'lamarck/v1/<kind>\\n' + RFC 8785 canonical JSON of the record without 'signature'.",
]

_MEMORY_RULES = [
    *_COMMON_RULES,
    "content is at most max_content_bytes UTF-8 bytes.",
    "schema_version '1.x' records are read and migrated to 2.0 (confidence_interval = "
    "{confidence, std-dev of Beta(success+1, failure+1)}); any other major is rejected with "
    "unsupported_version.",
    "access_level 'private' requires recipients; other levels forbid them.",
    "lesson (extension block): {operation, scope 'global'|'project:<hex>', status, version}; "
    "an 'active' lesson needs evidence naming an outcome_id.",
    "situation (extension block): {tool, subject, kind, interactive, env_fingerprint, unblock, "
    "probe, source}; an inferred situation has no unblock and no probe.",
    "provenance.updated_at is not before provenance.created_at.",
]

_OUTCOME_RULES = [
    *_COMMON_RULES,
    "checks have unique order indices; passed may be true only if at least one check exists "
    "and the latest run of each (kind, label, target) ran, did not fail and was not followed "
    "by a mutation.",
]

_VOTE_RULES = [
    *_COMMON_RULES,
    "A confirm or contradict vote names at least one of the voter's outcome ids.",
]


def _single(model: type[BaseModel], title: str, description: str) -> dict[str, Any]:
    schema = model.model_json_schema(mode="validation")
    schema["title"] = title
    schema["description"] = description
    return schema


def _memory_schema() -> dict[str, Any]:
    _, top = models_json_schema(
        [(Memory, "validation"), (MemoryV2, "validation")], ref_template="#/$defs/{model}"
    )
    defs = dict(top.get("$defs", {}))
    return {
        "title": "lamarck memory",
        "description": (
            "A memory (lesson) record as every lamarck reader accepts it: schema_version "
            "'1.x' (the Knowledge Interchange Standard v1.0 plus lamarck's extension blocks) "
            "or '2.x' (adds confidence_interval, causal_links, decay_function). A v1 record is "
            "migrated to v2 on read. Lesson fields live in the optional top-level 'lesson' "
            "block and the outcome ids proving a lesson in 'evidence[].outcome_id'; blocker "
            "lessons live in the optional top-level 'situation' block."
        ),
        "type": "object",
        "oneOf": [{"$ref": "#/$defs/Memory"}, {"$ref": "#/$defs/MemoryV2"}],
        "$defs": defs,
        "x-lamarck-rules": _MEMORY_RULES,
    }


def json_schema(kind: str, *, limits: RecordLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of ``kind``: "memory", "outcome" or "vote".

    Raises ``InvalidRecord`` (reason ``unknown_kind``) for any other kind.
    """
    if kind == "memory":
        schema = _memory_schema()
    elif kind == "outcome":
        schema = _single(
            Outcome, "lamarck outcome", "What really happened in one agent turn (schema 1.x)."
        )
        schema["x-lamarck-rules"] = _OUTCOME_RULES
    elif kind == "vote":
        schema = _single(
            Vote, "lamarck vote", "A peer's signed verdict on one memory, for the quorum."
        )
        schema["x-lamarck-rules"] = _VOTE_RULES
    else:
        raise InvalidRecord(
            f"no schema for {kind[:40]!r}; known: {', '.join(SCHEMA_KINDS)}",
            reason="unknown_kind",
        )
    schema["x-lamarck-limits"] = asdict(limits)
    return {"$schema": _DIALECT, **schema}
