"""The published JSON Schemas: generated from the models, one per record kind."""

from __future__ import annotations

import json

import pytest

from lamarck.errors import InvalidRecord
from lamarck.proto.memory import Memory, MemoryV2
from lamarck.proto.outcome import Outcome
from lamarck.proto.schema import SCHEMA_KINDS, json_schema
from lamarck.proto.vote import Vote


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_every_kind_has_a_json_serialisable_2020_12_schema(kind: str) -> None:
    schema = json_schema(kind)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert json.loads(json.dumps(schema)) == schema
    assert schema["x-lamarck-limits"]["max_record_bytes"] == 65536
    assert schema["x-lamarck-rules"]


def test_memory_schema_accepts_v1_and_v2_and_documents_the_extension_blocks() -> None:
    schema = json_schema("memory")
    assert {"$ref": "#/$defs/Memory"} in schema["oneOf"]
    assert {"$ref": "#/$defs/MemoryV2"} in schema["oneOf"]
    defs = schema["$defs"]
    assert set(defs["Memory"]["properties"]) == set(Memory.model_fields)
    assert set(defs["MemoryV2"]["properties"]) == set(MemoryV2.model_fields)
    for block in ("Lesson", "Situation", "Evidence", "Signature", "ConfidenceInterval"):
        assert block in defs
    assert "outcome_id" in defs["Evidence"]["properties"]
    assert "lesson" in schema["description"] and "situation" in schema["description"]
    assert defs["Memory"]["additionalProperties"] is False
    created = defs["Provenance"]["properties"]["created_at"]
    assert created["pattern"].endswith("Z$")


@pytest.mark.parametrize(("kind", "model"), [("outcome", Outcome), ("vote", Vote)])
def test_outcome_and_vote_schemas_list_every_field(kind: str, model: type[Outcome | Vote]) -> None:
    schema = json_schema(kind)
    assert set(schema["properties"]) == set(model.model_fields)
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("kind", ["", "Memory", "lesson", "key_rotation", "memory "])
def test_unknown_kind_is_invalid_record(kind: str) -> None:
    with pytest.raises(InvalidRecord) as info:
        json_schema(kind)
    assert info.value.reason == "unknown_kind"
