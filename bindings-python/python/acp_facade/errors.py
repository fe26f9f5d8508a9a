"""The one exception hierarchy of acp-facade.

:class:`AcpError` is the protocol error: a JSON-RPC error with an open integer ``code``, a short
``message`` and optional JSON ``data``. Raise it (or a subclass) from a host method to answer the
client with that code; any other exception answers ``-32603`` with its text. Errors the core
raises into Python arrive as the subclass of their code (``AcpError`` itself for other codes).

A call to the client (:class:`acp_facade.Client`) that fails raises a :class:`ClientError`, the
subclass of its kind: :class:`UnsupportedError`, :class:`RelativePathError`,
:class:`InvalidArgumentError`, :class:`NotEstablishedError`, :class:`RejectedError` (the client's
own JSON-RPC error: its ``code``, ``message`` and ``data``), :class:`ProtocolError` or
:class:`ReleasedError`. Each is an :class:`AcpError` with the code the Rust core gives the kind
(``-32601`` unsupported, ``-32602`` bad arguments, ``-32600`` released, ``-32603`` otherwise; the
client's own for a rejection), so a host method that lets one propagate answers with that code (a
runner turn that does fails with ``-32603`` and its message). A call that
is cancelled with its turn raises :class:`asyncio.CancelledError` instead: the language's
cancellation, not an error.

(The classes are declared here rather than in Rust because a ``pyo3`` class cannot subclass
``Exception`` under the stable ABI for Python 3.10; ``bindings-python/src/error.rs`` holds the
one conversion in each direction.)
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Dict, Optional, Type

__all__ = [
    "AcpError",
    "AuthRequired",
    "ClientError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidParams",
    "InvalidRequest",
    "MethodNotFound",
    "NotEstablishedError",
    "ParseError",
    "ProtocolError",
    "RejectedError",
    "ReleasedError",
    "RelativePathError",
    "RequestCancelled",
    "ResourceNotFound",
    "UnsupportedError",
    "client_error",
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


class ClientError(AcpError):
    """A call to the client failed. ``kind`` names why (the Rust core's ``ClientError::kind``:
    ``unsupported``, ``relative_path``, ``invalid_argument``, ``not_established``, ``rejected``,
    ``protocol`` or ``released``); ``method`` is the ACP method called, when there is one."""

    KIND: ClassVar[str] = ""

    kind: str
    method: Optional[str]

    def __init__(self, code: int, message: str, data: Any = None, *, method: Optional[str] = None) -> None:
        super().__init__(code, message, data)
        self.kind = self.KIND
        self.method = method

    def __reduce__(self) -> Any:
        return (_rebuild_client_error, (self.kind, self.code, self.message, self.data, dict(self.__dict__)))


class UnsupportedError(ClientError):
    """The client did not advertise ``capability``, which ``method`` needs; nothing was sent
    (code ``-32601``)."""

    KIND = "unsupported"
    capability: str = ""


class RelativePathError(ClientError):
    """The path given as ``field`` (``path``, ``cwd``) is not absolute; nothing was sent (code
    ``-32602``)."""

    KIND = "relative_path"
    field: str = ""
    path: str = ""


class InvalidArgumentError(ClientError):
    """The argument ``field`` is not valid for the call (``reason`` says why); nothing was sent
    (code ``-32602``)."""

    KIND = "invalid_argument"
    field: str = ""
    reason: str = ""


class NotEstablishedError(ClientError):
    """The session is not established yet (a call made while ``new_session`` still runs);
    nothing was sent (code ``-32603``)."""

    KIND = "not_established"


class RejectedError(ClientError):
    """The client answered with a JSON-RPC error: ``code``, ``message`` and ``data`` are the
    client's (a missing file is conventionally ``-32002``)."""

    KIND = "rejected"


class ProtocolError(ClientError):
    """The client's answer does not match the pinned schema (or a form answer does not fit the
    schema asked for); ``detail`` says how (code ``-32603``)."""

    KIND = "protocol"
    detail: str = ""


class ReleasedError(ClientError):
    """The terminal ``terminal_id`` was already released; nothing was sent (code ``-32600``)."""

    KIND = "released"
    terminal_id: str = ""


_CLIENT_ERRORS: Dict[str, Type[ClientError]] = {
    cls.KIND: cls
    for cls in (
        UnsupportedError,
        RelativePathError,
        InvalidArgumentError,
        NotEstablishedError,
        RejectedError,
        ProtocolError,
        ReleasedError,
    )
}


def client_error(kind: str, code: int, message: str, data: Any = None, details: Optional[Dict[str, Any]] = None) -> ClientError:
    """The exception for a failed call to the client of ``kind``, with its attributes
    (``method``, ``capability``, ``field``, ``path``, ``reason``, ``detail``, ``terminal_id``)
    from ``details``."""
    details = dict(details or {})
    cls = _CLIENT_ERRORS.get(kind, ClientError)
    error = cls(code, message, data, method=details.pop("method", None))
    if cls is ClientError:
        error.kind = kind
    for name, value in details.items():
        setattr(error, name, value)
    return error


def _rebuild_client_error(kind: str, code: int, message: str, data: Any, attributes: Dict[str, Any]) -> ClientError:
    error = client_error(kind, code, message, data)
    error.__dict__.update(attributes)
    return error
