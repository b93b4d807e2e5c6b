"""The wire schema: generated stubs import, services expose the agreed RPCs, signed bytes travel
unchanged, and the committed stubs are exactly what the schema generates."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from types import ModuleType

import grpc
import pytest
from google.protobuf import descriptor as _descriptor
from hypothesis import given
from hypothesis import strategies as st

from lamarck.proto.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    lessons_pb2,
    peer_pb2,
    peer_pb2_grpc,
    records_pb2,
)

ROOT = Path(__file__).resolve().parents[3]
GEN_PROTO = ROOT / "tools" / "gen_proto.py"
STUB_MODULES = ("agent", "lessons", "peer", "records")

# (request type, response type, client streams, server streams) per RPC.
PEER_RPCS = {
    "Publish": ("PublishRequest", "PublishResponse", False, False),
    "Sync": ("SyncRequest", "SyncResponse", False, True),
    "RequestVote": ("RequestVoteRequest", "RequestVoteResponse", False, False),
    "GetIdentity": ("GetIdentityRequest", "GetIdentityResponse", False, False),
    "GetReputation": ("GetReputationRequest", "GetReputationResponse", False, False),
}
AGENT_RPCS = {
    "RecordOutcome": ("RecordOutcomeRequest", "RecordOutcomeResponse", False, False),
    "Recall": ("RecallRequest", "RecallResponse", False, False),
    "CheckOperation": ("CheckOperationRequest", "CheckOperationResponse", False, False),
    "Remember": ("RememberRequest", "RememberResponse", False, False),
    "RecordSituation": ("RecordSituationRequest", "RecordSituationResponse", False, False),
    "GetLesson": ("GetLessonRequest", "GetLessonResponse", False, False),
    "ReportUse": ("ReportUseRequest", "ReportUseResponse", False, False),
    "Edit": ("EditRequest", "EditResponse", False, False),
    "Retire": ("RetireRequest", "RetireResponse", False, False),
    "History": ("HistoryRequest", "HistoryResponse", False, False),
    "List": ("ListRequest", "ListResponse", False, False),
    "Export": ("ExportRequest", "ExportResponse", False, True),
    "Import": ("ImportRequest", "ImportResponse", True, False),
}

# Canonical JSON as a signer emits it: UTF-8, non-ASCII text, escapes, no trailing newline.
CANONICAL_MEMORY = (
    '{"confidence":0.75,"content":"Run pytest from the repo root — not tests/ \\"ü\\"",'
    '"id":"5f0c6a52-6f1e-4d7e-9d2a-3c1b2a4e5f60","schema_version":"2.0",'
    '"signature":{"algorithm":"ed25519","value":"AAAA"}}'
).encode()


def _load_gen_proto() -> ModuleType:
    """tools/ is not a package: load the generator module from its path."""
    spec = importlib.util.spec_from_file_location("gen_proto", GEN_PROTO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_gen_proto(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the generator with this (the venv's) interpreter."""
    return subprocess.run(
        [sys.executable, str(GEN_PROTO), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _methods(service: _descriptor.ServiceDescriptor) -> dict[str, tuple[str, str, bool, bool]]:
    return {
        m.name: (m.input_type.name, m.output_type.name, m.client_streaming, m.server_streaming)
        for m in service.methods
    }


@pytest.mark.parametrize("name", STUB_MODULES)
def test_every_generated_module_imports_under_lamarck_proto_v1(name: str) -> None:
    for suffix in ("_pb2", "_pb2_grpc"):
        module = importlib.import_module(f"lamarck.proto.v1.{name}{suffix}")
        assert module.__name__ == f"lamarck.proto.v1.{name}{suffix}"


def test_generated_classes_live_in_the_package_but_keep_the_protobuf_names() -> None:
    assert records_pb2.SignedRecord.__module__ == "lamarck.proto.v1.records_pb2"
    assert records_pb2.SignedRecord.DESCRIPTOR.full_name == "lamarck.v1.SignedRecord"
    assert records_pb2.DESCRIPTOR.name == "lamarck/v1/records.proto"
    assert records_pb2.DESCRIPTOR.package == "lamarck.v1"


def test_peer_service_declares_the_agreed_rpcs_and_streaming_shapes() -> None:
    service = peer_pb2.DESCRIPTOR.services_by_name["PeerService"]
    assert service.full_name == "lamarck.v1.PeerService"
    assert _methods(service) == PEER_RPCS


def test_agent_service_declares_the_agreed_rpcs_and_streaming_shapes() -> None:
    service = agent_pb2.DESCRIPTOR.services_by_name["AgentService"]
    assert service.full_name == "lamarck.v1.AgentService"
    assert _methods(service) == AGENT_RPCS


def test_grpc_stubs_and_servicers_expose_every_rpc() -> None:
    for module, service, rpcs in (
        (peer_pb2_grpc, "PeerService", PEER_RPCS),
        (agent_pb2_grpc, "AgentService", AGENT_RPCS),
    ):
        servicer = getattr(module, f"{service}Servicer")
        assert set(rpcs) <= set(vars(servicer))
        assert callable(getattr(module, f"add_{service}Servicer_to_server"))
        with grpc.insecure_channel("127.0.0.1:1") as channel:
            stub = getattr(module, f"{service}Stub")(channel)
            assert all(callable(getattr(stub, rpc)) for rpc in rpcs)


def test_every_enum_starts_with_unspecified_zero() -> None:
    enums = [
        enum
        for module in (agent_pb2, lessons_pb2, peer_pb2, records_pb2)
        for enum in module.DESCRIPTOR.enum_types_by_name.values()
    ]
    assert len(enums) >= 9
    for enum in enums:
        first = enum.values_by_number[0]
        assert first.name.endswith("_UNSPECIFIED"), enum.full_name


def test_record_kinds_mirror_the_signing_kinds() -> None:
    names = {
        value.name.removeprefix("RECORD_KIND_").lower()
        for value in records_pb2.RecordKind.DESCRIPTOR.values
        if value.number != 0
    }
    # The quorum certificate is the one unsigned kind: a container of votes, each signed.
    assert names - {"quorum_certificate"} == {
        "memory",
        "vote",
        "key_rotation",
        "registration",
        "endorsement",
        "nonce",
        "outcome",
        "trust_summary",
        "attestation",
    }


def test_signed_records_are_carried_as_bytes_not_fields() -> None:
    field = records_pb2.SignedRecord.DESCRIPTOR.fields_by_name["canonical_json"]
    assert field.type == _descriptor.FieldDescriptor.TYPE_BYTES


def test_signed_record_round_trips_canonical_json_byte_for_byte() -> None:
    record = records_pb2.SignedRecord(
        kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=CANONICAL_MEMORY
    )
    batch = peer_pb2.PublishRequest(records=[record], sender_node_id="lmk1a", hop_count=2)

    decoded = peer_pb2.PublishRequest.FromString(batch.SerializeToString())

    assert decoded.records[0].canonical_json == CANONICAL_MEMORY
    assert decoded.records[0].kind == records_pb2.RECORD_KIND_MEMORY
    assert decoded.hop_count == 2


@given(st.binary(max_size=4096))
def test_any_bytes_survive_serialisation_unchanged(raw: bytes) -> None:
    record = records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_VOTE, canonical_json=raw)
    response = peer_pb2.RequestVoteResponse(vote=record)

    decoded = peer_pb2.RequestVoteResponse.FromString(response.SerializeToString())

    assert decoded.vote.canonical_json == raw


class _EchoPeer(peer_pb2_grpc.PeerServiceServicer):
    """Acks each record with the length of the bytes it received and streams them back."""

    def Publish(
        self, request: peer_pb2.PublishRequest, context: grpc.ServicerContext
    ) -> peer_pb2.PublishResponse:
        return peer_pb2.PublishResponse(
            acks=[
                records_pb2.RecordAck(
                    index=i,
                    status=records_pb2.ACK_STATUS_ACCEPTED,
                    reason=str(len(r.canonical_json)),
                )
                for i, r in enumerate(request.records)
            ]
        )

    def Sync(
        self, request: peer_pb2.SyncRequest, context: grpc.ServicerContext
    ) -> Iterator[peer_pb2.SyncResponse]:
        record = records_pb2.SignedRecord(
            kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=CANONICAL_MEMORY
        )
        yield peer_pb2.SyncResponse(records=[record], cursor="c1", more=True)
        yield peer_pb2.SyncResponse(records=[record], cursor="c2", more=False)

    def RequestVote(
        self, request: peer_pb2.RequestVoteRequest, context: grpc.ServicerContext
    ) -> peer_pb2.RequestVoteResponse:
        raise NotImplementedError

    def GetIdentity(
        self, request: peer_pb2.GetIdentityRequest, context: grpc.ServicerContext
    ) -> peer_pb2.GetIdentityResponse:
        raise NotImplementedError

    def GetReputation(
        self, request: peer_pb2.GetReputationRequest, context: grpc.ServicerContext
    ) -> peer_pb2.GetReputationResponse:
        raise NotImplementedError


def test_signed_bytes_cross_a_real_grpc_channel_unchanged() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    peer_pb2_grpc.add_PeerServiceServicer_to_server(_EchoPeer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = peer_pb2_grpc.PeerServiceStub(channel)
            record = records_pb2.SignedRecord(
                kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=CANONICAL_MEMORY
            )
            acks = stub.Publish(peer_pb2.PublishRequest(records=[record]), timeout=10).acks
            chunks = list(stub.Sync(peer_pb2.SyncRequest(), timeout=10))
    finally:
        server.stop(grace=None)

    assert [(a.index, a.status, a.reason) for a in acks] == [
        (0, records_pb2.ACK_STATUS_ACCEPTED, str(len(CANONICAL_MEMORY)))
    ]
    assert [c.cursor for c in chunks] == ["c1", "c2"]
    assert all(c.records[0].canonical_json == CANONICAL_MEMORY for c in chunks)


def test_import_rewrite_touches_module_names_only() -> None:
    gen_proto = _load_gen_proto()
    generated = (
        "from lamarck.v1 import records_pb2 as lamarck_dot_v1_dot_records__pb2\n"
        "import lamarck.v1.peer_pb2\n"
        "x: lamarck.v1.peer_pb2_grpc.PeerServiceStub\n"
        "_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, 'lamarck.v1.agent_pb2', g)\n"
        "b'\\x12\\nlamarck.v1\\x32\\x18.lamarck.v1.SignedRecord'\n"
    )

    assert gen_proto.rewrite_imports(generated) == (
        "from lamarck.proto.v1 import records_pb2 as lamarck_dot_v1_dot_records__pb2\n"
        "import lamarck.proto.v1.peer_pb2\n"
        "x: lamarck.proto.v1.peer_pb2_grpc.PeerServiceStub\n"
        "_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, 'lamarck.proto.v1.agent_pb2', g)\n"
        "b'\\x12\\nlamarck.v1\\x32\\x18.lamarck.v1.SignedRecord'\n"
    )


def test_committed_stubs_match_the_schema() -> None:
    result = _run_gen_proto("--check")
    assert result.returncode == 0, result.stderr


def test_check_names_every_stale_file(tmp_path: Path) -> None:
    stubs = tmp_path / "v1"
    shutil.copytree(ROOT / "proto" / "v1", stubs, ignore=shutil.ignore_patterns("__pycache__"))
    (stubs / "peer_pb2.pyi").write_bytes((stubs / "peer_pb2.pyi").read_bytes() + b"# edited\n")
    (stubs / "records_pb2.py").unlink()
    (stubs / "old_pb2.py").write_text("")

    result = _run_gen_proto("--check", "--out", str(stubs))

    assert result.returncode == 1
    assert "differs: peer_pb2.pyi" in result.stderr
    assert "missing: records_pb2.py" in result.stderr
    assert "stale (not generated): old_pb2.py" in result.stderr
