"""A failed call's status becomes lamarck's typed error on the client side."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from lamarck import errors
from lamarck.client import error_from_rpc


class _Failed(grpc.RpcError):
    """What a grpc call raises: a code, details and trailing metadata."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing: Any) -> None:
        self._code, self._details, self._trailing = code, details, trailing

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Any:
        return self._trailing


def _details(reason: str, type_name: str) -> bytes:
    info = error_details_pb2.ErrorInfo(reason=reason, metadata={"type": type_name})
    packed = any_pb2.Any()
    packed.Pack(info)
    return status_pb2.Status(code=3, message="m", details=[packed]).SerializeToString()


def test_the_error_info_names_the_typed_error_and_its_reason() -> None:
    trailing = (("grpc-status-details-bin", _details("secret_detected", "SecretDetected")),)
    err = error_from_rpc(
        _Failed(grpc.StatusCode.INVALID_ARGUMENT, "secret_detected: a key", trailing)
    )
    assert isinstance(err, errors.SecretDetected)
    assert err.reason == "secret_detected" and str(err).endswith("a key")


def test_a_garbled_detail_falls_back_to_the_reason_trailer() -> None:
    trailing = (
        ("grpc-status-details-bin", b"\xff\xff not a status"),
        ("lamarck-reason", "invalid_record"),
    )
    err = error_from_rpc(_Failed(grpc.StatusCode.INVALID_ARGUMENT, "bad", trailing))
    assert err.reason == "invalid_record"
    assert isinstance(err, errors.LamarckError)


def test_a_call_that_reached_no_handler_is_named_by_its_status() -> None:
    err = error_from_rpc(_Failed(grpc.StatusCode.UNAVAILABLE, "connect failed", ()))
    assert err.reason == "unavailable" and type(err) is errors.LamarckError
