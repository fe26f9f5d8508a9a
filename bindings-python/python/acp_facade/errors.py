"""The one exception hierarchy of acp-facade.

:class:`AcpError` is the protocol error: a JSON-RPC error with an open integer ``code``, a short
``message`` and optional JSON ``data``. Raise it (or a subclass) from a host method to answer the
client with that code; any other exception answers ``-32603`` with its text. Errors the core
raises into Python arrive as the subclass of their code (``AcpError`` itself for other codes).

(The classes are declared here rather than in Rust because a ``pyo3`` class cannot subclass
``Exception`` under the stable ABI for Python 3.10; ``bindings-python/src/error.rs`` holds the
one conversion in each direction.)
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, Type

__all__ = [
    "AcpError",
    "AuthRequired",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MethodNotFound",
    "ParseError",
    "RequestCancelled",
    "ResourceNotFound",
    "error_for_code",
]


class AcpError(Exception):
    """A JSON-RPC error: ``code``, ``message`` and optional JSON ``data``."""

    code: int
    message: str
    data: Any

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = str(message)
        self.data = data

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"

    def __reduce__(self) -> Any:
        return (error_for_code, (self.code, self.message, self.data))


class _CodedError(AcpError):
    """An :class:`AcpError` whose class fixes the code."""

    CODE: ClassVar[int] = -32603

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(self.CODE, message, data)


class ParseError(_CodedError):
    """``-32700``: the message was not valid JSON."""

    CODE = -32700


class InvalidRequest(_CodedError):
    """``-32600``: the request is not valid in the current state."""

    CODE = -32600


class MethodNotFound(_CodedError):
    """``-32601``: the method is unknown or not offered."""

    CODE = -32601


class InvalidParams(_CodedError):
    """``-32602``: the params are invalid; the message names the field."""

    CODE = -32602


class InternalError(_CodedError):
    """``-32603``: an implementation failure, with its text."""

    CODE = -32603


class RequestCancelled(_CodedError):
    """``-32800``: the request was cancelled."""

    CODE = -32800


class AuthRequired(_CodedError):
    """``-32000``: authentication is required first."""

    CODE = -32000


class ResourceNotFound(_CodedError):
    """``-32002``: the resource (for example the session) was not found."""

    CODE = -32002


_BY_CODE: Dict[int, Type[_CodedError]] = {
    cls.CODE: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestCancelled,
        AuthRequired,
        ResourceNotFound,
    )
}


def error_for_code(code: int, message: str, data: Any = None) -> AcpError:
    """The exception for ``code``: its subclass when it is a well-known code."""
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(message, data)
    return AcpError(code, message, data)
