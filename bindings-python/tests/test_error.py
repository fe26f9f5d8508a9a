"""The exception hierarchy (mirrors the core's error module)."""

from __future__ import annotations

import pickle

import pytest

import acp_facade
from acp_facade.errors import error_for_code


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (acp_facade.ParseError, -32700),
        (acp_facade.InvalidRequest, -32600),
        (acp_facade.MethodNotFound, -32601),
        (acp_facade.InvalidParams, -32602),
        (acp_facade.InternalError, -32603),
        (acp_facade.RequestCancelled, -32800),
        (acp_facade.AuthRequired, -32000),
        (acp_facade.ResourceNotFound, -32002),
    ],
)
def test_each_code_has_its_subclass(cls: type, code: int) -> None:
    error = cls("went wrong", {"k": 1})
    assert isinstance(error, acp_facade.AcpError) and isinstance(error, Exception)
    assert (error.code, error.message, error.data, str(error)) == (code, "went wrong", {"k": 1}, "went wrong")
    assert type(error_for_code(code, "m")) is cls
    assert repr(error) == f"{cls.__name__}(code={code}, message='went wrong')"


def test_unknown_codes_round_trip() -> None:
    error = error_for_code(-31999, "custom", [1])
    assert type(error) is acp_facade.AcpError
    assert (error.code, error.data) == (-31999, [1])
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.code, again.message, again.data) == (acp_facade.AcpError, -31999, "custom", [1])
