"""Serving an agent remotely: ACP over Streamable HTTP (POST plus Server-Sent Events) and over
WebSocket on one endpoint (default ``/acp``), as the official SDKs' remote clients speak them.

:meth:`acp_facade.Agent.serve_http` binds and returns a :class:`RemoteServer`; every HTTP
connection (an ``initialize`` POST and what follows under its ``Acp-Connection-Id``) and every
WebSocket is its own ACP connection, with its own agent made from the agent's options: all of them
share the host, its store and its sessions. :meth:`acp_facade.Agent.run_http` serves from a plain
call until SIGTERM or SIGINT.

The rules, checked before any ACP is read: a request without a valid bearer token is answered
``401`` when there is a ``token_verifier`` (required off loopback); a request carrying an
``Origin`` not in ``allowed_origins`` is answered ``403``; an agent bound to a loopback address
answers only requests whose ``Host`` is ``localhost``, ``127.0.0.1`` or ``[::1]``; a body larger
than ``max_body_size`` is answered ``413``; a connection beyond ``max_connections`` (an
``initialize`` POST or a WebSocket upgrade) is answered ``503`` with ``Retry-After``. A connection is its principal's (the name its token
was verified as): with a :class:`acp_facade.Runner`, a session belongs to the principal that created
it, and to another it does not exist (``session/list`` leaves it out, every session method answers
as for an unknown id). A :class:`acp_facade.SessionHost` of one's own is not told the principal
(yet): all of its connections see the same sessions.

With ``tls_cert`` and ``tls_key`` (PEM files) the server speaks HTTPS and WSS, and its
:attr:`RemoteServer.url` is ``https://``. A client that reads slowly slows its agent down once
``max_buffered_bytes`` of the agent's messages wait for it; one that takes none of them for two
``keepalive_interval`` s is hung up. A stream silent for ``keepalive_interval`` gets a
``: keepalive`` comment (SSE) or a Ping (WebSocket).

Invariants: the server's host calls (and the token verifier) run on the event loop that called
``serve_http``, which the server holds until its shutdown has ended; a token verifier that raises,
or answers anything but a non-empty ``str`` or ``None``, refuses the token (``401``) and is logged,
and the server goes on serving. Importing this module does not import :mod:`asyncio`.
"""

from __future__ import annotations

from . import _native
from ._bridge import dispatcher

from . import _hints

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Awaitable, Callable, Dict, Optional, Tuple, Union
    import asyncio
    import logging

__all__ = ["RemoteServer", "TokenVerifier"]

if TYPE_CHECKING:  # the type alias, made at run time when first used (`__getattr__`, below)
    TokenVerifier = Callable[[str], Union[Awaitable[Optional[str]], Optional[str]]]
    """Maps a bearer token to the name of its principal, or ``None`` to refuse it: an ``async
    def`` or a plain function."""


def _log() -> "logging.Logger":
    import logging

    return logging.getLogger("acp_facade")


class _Verifier:
    """The token verifier as the core calls it (``verify(token)`` on the loop): the caller's
    callable, sync or async, whose failures are refusals."""

    __slots__ = ("_verify",)

    def __init__(self, verify: TokenVerifier) -> None:
        if not callable(verify):
            raise TypeError(f"token_verifier must be callable, got {type(verify).__name__}")
        self._verify = verify

    async def verify(self, token: str) -> Optional[str]:
        import inspect

        try:
            principal = self._verify(token)
            if inspect.isawaitable(principal):
                principal = await principal
        except Exception:
            _log().exception("acp_facade: the token verifier raised; the token is refused")
            return None
        if principal is None:
            return None
        if not isinstance(principal, str) or not principal:
            _log().error(
                "acp_facade: the token verifier answered %r, not a principal name (a non-empty str) "
                "or None; the token is refused",
                principal,
            )
            return None
        return principal


class _Settings:
    """What the native ``Agent.serve_http`` reads, by attribute (``None``: the core's default)."""

    __slots__ = (
        "address",
        "path",
        "token_verifier",
        "allowed_origins",
        "max_body_size",
        "shutdown_grace",
        "idle_timeout",
        "max_buffered_bytes",
        "max_connections",
        "keepalive_interval",
        "tls_cert",
        "tls_key",
    )

    address: Tuple[str, int]
    path: Optional[str]
    token_verifier: Optional[_Verifier]
    allowed_origins: list[str]
    max_body_size: Optional[int]
    shutdown_grace: Optional[float]
    idle_timeout: Optional[float]
    max_buffered_bytes: Optional[int]
    max_connections: Optional[int]
    keepalive_interval: Optional[float]
    tls_cert: Optional[str]
    tls_key: Optional[str]

    def __init__(self, address: Tuple[str, int], **settings: Any) -> None:
        self.address = address
        for name in self.__slots__[1:]:
            setattr(self, name, settings.pop(name, None))
        if settings:
            raise TypeError(f"unknown keyword argument(s): {', '.join(sorted(settings))}")
        verifier: Any = self.token_verifier
        if verifier is not None:
            self.token_verifier = _Verifier(verifier)
        origins: Any = self.allowed_origins
        if isinstance(origins, str):
            raise TypeError("allowed_origins must be an iterable of origins, not one str")
        self.allowed_origins = [] if origins is None else list(origins)
        for name in ("max_buffered_bytes", "max_connections"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        for name in ("tls_cert", "tls_key"):
            path: Any = getattr(self, name)
            if path is not None:
                import os

                setattr(self, name, os.fsdecode(os.fspath(path)))


def split_address(address: Union[str, Tuple[str, int]]) -> Tuple[str, int]:
    """``"HOST:PORT"`` (an IPv6 host in brackets: ``"[::1]:8080"``) or ``(host, port)`` as
    ``(host, port)``; ``ValueError`` when it is neither."""
    if isinstance(address, tuple):
        host, port = address
    else:
        host, sep, digits = str(address).rpartition(":")
        if not sep or not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"address must be HOST:PORT, got {address!r}")
        port = int(digits)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"address must be HOST:PORT, got {address!r}")
    return host, port


async def _resolve(address: Union[str, Tuple[str, int]]) -> Tuple[str, int]:
    """The first IP address ``address`` resolves to (on the loop: no blocking lookup), and its port."""
    import asyncio
    import socket

    host, port = split_address(address)
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if not infos:
        raise ValueError(f"address must be HOST:PORT, got {address!r}")
    return str(infos[0][4][0]), port


class RemoteServer:
    """A running remote agent server (from :meth:`acp_facade.Agent.serve_http`).

    Use it as an async context manager (``async with await agent.serve_http(...) as server:``)
    or call :meth:`shutdown`; :meth:`serve_forever` waits until it is shut down (cancelling it
    shuts the server down). Garbage-collected without a shutdown, it hangs every connection up at
    once.
    """

    __slots__ = ("_native", "_closing", "_closed", "__weakref__")

    def __init__(self, native: _native.RemoteServer, closed: asyncio.Future[None]) -> None:
        self._native = native
        self._closing: Optional[asyncio.Future[None]] = None
        self._closed = closed

    @property
    def url(self) -> str:
        """The URL of the endpoint, e.g. ``http://127.0.0.1:8080/acp`` (``https://`` with TLS; the
        port resolved when 0 was asked for)."""
        return self._native.url

    @property
    def local_address(self) -> Tuple[str, int]:
        """The address listened on, ``(host, port)``."""
        return self._native.local_address

    @property
    def connections(self) -> int:
        """How many ACP connections are open (HTTP and WebSocket)."""
        return self._native.connections

    def is_serving(self) -> bool:
        """Whether no shutdown has begun."""
        return self._closing is None

    async def shutdown(self) -> None:
        """Shuts down gracefully and returns once every connection has ended: new connections are
        refused (``503``) while the open ones are still served (a client can still answer a
        permission request or cancel its turn) until their requests in flight are answered, for up
        to ``shutdown_grace``; then every connection is hung up, and each agent closes its sessions
        as at the end of stdio. Calling it again waits for the same shutdown; cancelling the caller
        does not stop it."""
        import asyncio

        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shut_down())
        await asyncio.shield(self._closing)

    async def _shut_down(self) -> None:
        try:
            await dispatcher.wait(self._native.shutdown)
        finally:
            dispatcher.detach()
            if not self._closed.done():
                self._closed.set_result(None)

    async def wait_closed(self) -> None:
        """Waits until a shutdown (begun elsewhere) has ended."""
        import asyncio

        await asyncio.shield(self._closed)

    async def serve_forever(self) -> None:
        """Serves until the server is shut down; cancelled, it shuts the server down first."""
        import asyncio

        try:
            await self.wait_closed()
        except asyncio.CancelledError:
            await self.shutdown()
            raise

    async def __aenter__(self) -> "RemoteServer":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def __repr__(self) -> str:
        return f"RemoteServer(url={self.url!r}, connections={self.connections})"


async def serve_http(native_agent: _native.Agent, address: Union[str, Tuple[str, int]], **settings: Any) -> RemoteServer:
    """Binds and serves ``native_agent`` as :meth:`acp_facade.Agent.serve_http` describes."""
    import asyncio

    config = _Settings(await _resolve(address), **settings)
    loop = asyncio.get_running_loop()
    dispatcher.attach(loop)
    try:
        native = await dispatcher.wait(native_agent.serve_http, config)
    except BaseException:
        dispatcher.detach()
        raise
    return RemoteServer(native, loop.create_future())


def run_http(
    native_agent: _native.Agent,
    address: Union[str, Tuple[str, int]],
    ready: Optional[Callable[[RemoteServer], Any]],
    settings: dict[str, Any],
) -> None:
    """Serves until SIGTERM or SIGINT, then shuts down gracefully (:meth:`acp_facade.Agent.run_http`)."""
    import asyncio
    import signal

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        handled = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(signum, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
                continue
            handled.append(signum)
        try:
            async with await serve_http(native_agent, address, **settings) as server:
                if ready is not None:
                    ready(server)
                await stop.wait()
        finally:
            for signum in handled:
                loop.remove_signal_handler(signum)

    asyncio.run(main())


if not TYPE_CHECKING:

    def _make_aliases() -> Dict[str, Any]:
        from typing import Awaitable, Callable, Optional, Union

        return {"TokenVerifier": Callable[[str], Union[Awaitable[Optional[str]], Optional[str]]]}

    __getattr__ = _hints.aliases(__name__, ("TokenVerifier",), _make_aliases)
