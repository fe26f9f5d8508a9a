"""The agent: :class:`Options` (host parts and limits) and :class:`Agent`, served as coroutines in
the caller's asyncio loop over stdio, over a pair of asyncio streams or remotely over HTTP and
WebSocket (:meth:`Agent.serve_http`, see :mod:`acp_facade.remote`), or from a plain call
(:meth:`Agent.run_stdio`, :meth:`Agent.run_http`); ``run_stdio`` answers ``initialize`` before
asyncio is even imported.

Importing this package does not import :mod:`asyncio` (about 35 ms of a Python agent's start-up):
a test holds it to that."""

from __future__ import annotations

from . import _native
from ._bridge import dispatcher
from .acp import McpCapabilities, PromptCapabilities
from .extensions import adapted
from .host import HostAdapter, host_auth, host_parts, require_async
from . import remote as _remote

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Literal, Mapping, Optional, Tuple, Union
    from .extensions import ExtensionMethod, ExtensionNotification
    from .host import Authenticator, SessionHost
    from .remote import RemoteServer, TokenVerifier
    import asyncio
    import os

__all__ = ["Agent", "Options", "run_http", "run_stdio", "serve", "serve_http", "serve_stdio"]


class Options:
    """The host parts and settings of an agent (the Rust ``acp_facade::Options``).

    Build it over a host (its optional methods switch capabilities on, authentication included:
    see :class:`acp_facade.Authenticator`) or get one from :meth:`acp_facade.Runner.options`.
    Every setting is a keyword argument of the constructor, and also a builder method of the same
    name that returns a changed copy, as in Rust (``Options(host, max_sessions=8)`` and
    ``Options(host).max_sessions(8)`` are the same options; :meth:`agent_info` sets
    ``agent_name`` and ``agent_version`` together).

    :param host: the :class:`acp_facade.SessionHost` that creates sessions; its ``load_session``,
        ``resume_session``, ``list_sessions``, ``delete_session`` and ``authenticate`` methods,
        when defined, switch the matching capabilities on.
    :param agent_name: ``agentInfo.name`` (default ``"acp-facade"``).
    :param agent_version: ``agentInfo.version`` (default the package's version).
    :param compaction: whether ``/compact`` is offered (the live session needs ``compact``).
    :param system_prompt: whether the host takes the client's system prompt (``systemPrompt`` on
        ``session/new``, ``load`` and ``resume``, handed over as :attr:`acp_facade.Setup.system_prompt`):
        advertised as ``sessionCapabilities.systemPrompt``. Off by default; a system prompt a
        client sends anyway is then left out of the setup (ACP: clients must not send it).
    :param protocol_v2: whether a client that asks for ACP v2 (Preview) is served in v2 (off by
        default: such a client is answered 1 and goes on in v1). Hosts and turns do not change;
        the core translates. v2 also needs the host's ``list_sessions`` and ``resume_session``.
    :param replay_order: the order in which v1's ``session/load`` replays a session's
        conversation: ``"grouped"`` (the default: every user message, then every assistant
        message, then the tool calls; an editor shows all the questions, then all the answers) or
        ``"conversation"`` (turn by turn as recorded, as an editor showed it live; recommended for
        editors). Either way the same updates with the same message ids, then the session's usage
        and latest plan; ACP v2's ``session/resume`` always replays in conversation order. Any
        other value is a ``ValueError``.
    :param close: whether ``session/close`` is offered.
    :param prompt_capabilities: the prompt content accepted beyond text and resource links
        (``promptCapabilities``: image, audio, embedded context); anything else a client sends is
        refused with ``-32602`` before the host sees it.
    :param mcp_capabilities: the MCP transports accepted beyond stdio (``mcpCapabilities``: http,
        sse).
    :param extension_methods: ``_``-prefixed request names mapped to ``async def`` handlers (see
        :mod:`acp_facade.extensions`), advertised under ``agentCapabilities._meta``.
    :param extension_notifications: ``_``-prefixed notification names mapped to ``async def``
        handlers.
    :param max_sessions: the most live sessions at once (default 1024).
    :param max_page_size: the largest ``session/list`` page, at least 1 (default 50).
    :param close_grace: how long ``session/close`` waits for a session's ``shutdown``, in seconds
        (default 5).
    :param cancel_grace: how long a cancelled prompt waits for its turn to end, in seconds
        (default 10).
    :param max_message_size: the largest incoming message, in bytes (default 64 MiB).
    """

    __slots__ = ("_native",)

    def __init__(
        self,
        host: SessionHost,
        *,
        agent_name: Optional[str] = None,
        agent_version: Optional[str] = None,
        compaction: bool = False,
        system_prompt: bool = False,
        protocol_v2: bool = False,
        replay_order: Literal["grouped", "conversation"] = "grouped",
        close: bool = True,
        prompt_capabilities: Optional[PromptCapabilities] = None,
        mcp_capabilities: Optional[McpCapabilities] = None,
        extension_methods: Optional[Mapping[str, ExtensionMethod]] = None,
        extension_notifications: Optional[Mapping[str, ExtensionNotification]] = None,
        max_sessions: Optional[int] = None,
        max_page_size: Optional[int] = None,
        close_grace: Optional[float] = None,
        cancel_grace: Optional[float] = None,
        max_message_size: Optional[int] = None,
    ) -> None:
        native = _native.Options.for_host(HostAdapter(host), host_parts(host), host_auth(host))
        self._native = native.replace(
            agent_name=agent_name,
            agent_version=agent_version,
            compaction=compaction,
            system_prompt=system_prompt,
            protocol_v2=protocol_v2,
            replay_order=replay_order,
            close=close,
            prompt_capabilities=prompt_capabilities,
            mcp_capabilities=mcp_capabilities,
            extension_methods=None if extension_methods is None else adapted(extension_methods, "extension method"),
            extension_notifications=(
                None if extension_notifications is None else adapted(extension_notifications, "extension notification")
            ),
            max_sessions=max_sessions,
            max_page_size=max_page_size,
            close_grace=close_grace,
            cancel_grace=cancel_grace,
            max_message_size=max_message_size,
        )

    @classmethod
    def _wrap(cls, native: _native.Options) -> "Options":
        self = cls.__new__(cls)
        self._native = native
        return self

    def _with(self, change: Callable[[_native.Options], _native.Options]) -> "Options":
        return Options._wrap(change(self._native))

    def authenticator(self, authenticator: Authenticator) -> "Options":
        """A copy whose authentication is served by ``authenticator``: an object with the methods
        of :class:`acp_facade.Authenticator` (``auth_methods``, ``authenticate``, optionally
        ``requires_authentication`` and ``logout``). This is how a :class:`acp_facade.Runner`'s
        agent gets authentication; while it requires a login, every session method answers
        ``-32000`` until ``authenticate`` succeeds (and again after ``logout``)."""
        auth = host_auth(authenticator)
        if auth is None:
            raise TypeError(f"{type(authenticator).__name__} has no `authenticate` method")
        require_async(authenticator, ("authenticate", "logout"), type(authenticator).__name__)
        return Options._wrap(self._native.with_authenticator(HostAdapter(authenticator), auth))

    def agent_info(self, name: str, version: str) -> "Options":
        """Sets ``agentInfo`` (the ``agent_name`` and ``agent_version`` keyword arguments)."""
        return self._with(lambda o: o.replace(agent_name=name, agent_version=version))

    def compaction(self, on: bool) -> "Options":
        """Turns ``/compact`` on or off."""
        return self._with(lambda o: o.replace(compaction=on))

    def system_prompt(self, accepted: bool) -> "Options":
        """Declares whether the host takes the client's system prompt (the ``system_prompt``
        keyword argument)."""
        return self._with(lambda o: o.replace(system_prompt=accepted))

    def protocol_v2(self, on: bool) -> "Options":
        """Serves ACP v2 (Preview) to a client that asks for it, or not (see the class doc)."""
        return self._with(lambda o: o.replace(protocol_v2=on))

    def replay_order(self, order: Literal["grouped", "conversation"]) -> "Options":
        """Sets the order in which v1's ``session/load`` replays a session's conversation (the
        ``replay_order`` keyword argument; anything but ``"grouped"`` or ``"conversation"`` is a
        ``ValueError``)."""
        return self._with(lambda o: o.replace(replay_order=order))

    def close(self, on: bool) -> "Options":
        """Turns ``session/close`` on or off."""
        return self._with(lambda o: o.replace(close=on))

    def prompt_capabilities(self, capabilities: PromptCapabilities) -> "Options":
        """Sets the prompt content the agent accepts beyond text and resource links
        (``promptCapabilities``: image, audio, embedded context)."""
        return self._with(lambda o: o.replace(prompt_capabilities=capabilities))

    def mcp_capabilities(self, capabilities: McpCapabilities) -> "Options":
        """Sets the MCP transports the agent accepts beyond stdio (``mcpCapabilities``: http,
        sse)."""
        return self._with(lambda o: o.replace(mcp_capabilities=capabilities))

    def extension_methods(self, handlers: Mapping[str, ExtensionMethod]) -> "Options":
        """Adds extension request handlers, by name (each ``_``-prefixed, else ``ValueError``;
        an ``async def``, else ``TypeError``); a name registered before is replaced."""
        return self._with(lambda o: o.replace(extension_methods=adapted(handlers, "extension method")))

    def extension_notifications(self, handlers: Mapping[str, ExtensionNotification]) -> "Options":
        """Adds extension notification handlers, by name (see :meth:`extension_methods`)."""
        return self._with(lambda o: o.replace(extension_notifications=adapted(handlers, "extension notification")))

    def max_sessions(self, max: int) -> "Options":
        """Sets the live-session limit."""
        return self._with(lambda o: o.replace(max_sessions=max))

    def max_page_size(self, max: int) -> "Options":
        """Sets the largest ``session/list`` page (at least 1)."""
        return self._with(lambda o: o.replace(max_page_size=max))

    def close_grace(self, seconds: float) -> "Options":
        """Sets how long ``session/close`` waits for a session's ``shutdown``."""
        return self._with(lambda o: o.replace(close_grace=seconds))

    def cancel_grace(self, seconds: float) -> "Options":
        """Sets how long a cancelled prompt waits for its turn to end."""
        return self._with(lambda o: o.replace(cancel_grace=seconds))

    def max_message_size(self, max: int) -> "Options":
        """Sets the largest incoming message, in bytes."""
        return self._with(lambda o: o.replace(max_message_size=max))

    def __repr__(self) -> str:
        return repr(self._native)


class _Streams:
    """The asyncio streams a connection is served over, as the core's pumps call them."""

    __slots__ = ("_reader", "_writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self) -> bytes:
        return await self._reader.read(65536)

    async def write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def close(self) -> None:
        self._writer.close()


class Agent:
    """An ACP agent serving one connection on behalf of a host."""

    __slots__ = ("_native",)

    def __init__(self, options: Options) -> None:
        self._native = _native.Agent(options._native)

    async def _serve(self, start: Any, *args: Any) -> None:
        """Attaches the bridge to the running loop, calls ``start(*args, future_id)`` (which
        returns the serve's handle) and waits for that future; then aborts the handle and
        detaches."""
        import asyncio

        dispatcher.attach(asyncio.get_running_loop())
        handle = None
        try:
            future, fid = dispatcher.future()
            handle = start(*args, fid)
            await future
        finally:
            if handle is not None:
                handle.abort()
            dispatcher.detach()

    def run_stdio(self) -> None:
        """Serves over the process's stdin and stdout until the client hangs up, from a plain
        (synchronous) call: the entry point of an agent process.

        Serving starts at once, before anything else: ``initialize`` needs no host code and is
        answered while Python goes on importing :mod:`asyncio`; then the host's coroutines run on
        a new event loop (:func:`asyncio.run`), and what the client sent meanwhile waits for it,
        in order. Use :meth:`serve_stdio` to serve in an event loop of your own. ``OSError`` when
        stdio cannot be served; ``KeyboardInterrupt`` stops serving.

        Nothing else may write to stdout meanwhile: it is the protocol channel.
        """
        handle = self._native.start_stdio()

        def wait(fid: int) -> Any:
            handle.wait(fid)
            return handle

        try:
            import asyncio

            asyncio.run(self._serve(wait))
        finally:
            handle.abort()

    async def serve_stdio(self) -> None:
        """Serves over the process's stdin and stdout until the client hangs up.

        Nothing else may write to stdout meanwhile: it is the protocol channel.
        """
        await self._serve(self._native.serve_stdio)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serves over a pair of asyncio streams until ``reader`` ends."""
        await self._serve(self._native.serve_streams, _Streams(reader, writer))

    async def serve_http(
        self,
        address: Union[str, Tuple[str, int]] = "127.0.0.1:0",
        *,
        path: str = "/acp",
        token_verifier: Optional[TokenVerifier] = None,
        allowed_origins: Iterable[str] = (),
        max_body_size: Optional[int] = None,
        shutdown_grace: float = 10.0,
        idle_timeout: float = 300.0,
        max_buffered_bytes: Optional[int] = None,
        max_connections: Optional[int] = None,
        keepalive_interval: Optional[float] = None,
        tls_cert: Union[str, os.PathLike[str], None] = None,
        tls_key: Union[str, os.PathLike[str], None] = None,
    ) -> RemoteServer:
        """Serves remotely: ACP over Streamable HTTP and WebSocket at ``http://ADDRESS{path}``
        (HTTPS and WSS at ``https://ADDRESS{path}`` with ``tls_cert`` and ``tls_key``),
        each connection its own agent made from this agent's options (one host, one store, shared
        sessions). Returns once bound; the server runs in this event loop until
        :meth:`RemoteServer.shutdown` (or the end of ``async with``). See :mod:`acp_facade.remote`.

        :param address: ``"HOST:PORT"`` (``"[::1]:8080"`` for IPv6) or ``(host, port)``; a name is
            resolved and its first address served; port 0 picks a free port
            (:attr:`RemoteServer.local_address`, :attr:`RemoteServer.url`).
        :param path: the endpoint's path (it must start with ``/``).
        :param token_verifier: maps a bearer token (``Authorization: Bearer TOKEN``) to the name
            of its principal, or ``None`` to refuse it (``401``): an ``async def verify(token)``
            or a plain function. One that raises or answers anything but a non-empty ``str`` or
            ``None`` refuses the token, and is logged. Required unless ``address`` is loopback.
        :param allowed_origins: the ``Origin`` values a request may carry (exactly, e.g.
            ``"https://app.example"``); any other is answered ``403``. Requests without ``Origin``
            (native clients) are not affected.
        :param max_body_size: the largest request body (a POST, a WebSocket message) in bytes,
            else ``413`` (default: the options' ``max_message_size``).
        :param shutdown_grace: how long a shutdown lets requests in flight (running turns) finish
            before it hangs up, in seconds.
        :param idle_timeout: how long an HTTP connection may have no stream open and make no
            request before it is hung up, in seconds (more than 0).
        :param max_buffered_bytes: the most bytes of the agent's messages that may wait for one
            connection's client (at least 1; default 16 MiB): beyond it the agent waits for the
            client to read (nothing is dropped); a client that takes none of them for two
            ``keepalive_interval`` s is hung up.
        :param max_connections: the most ACP connections (HTTP and WebSocket) open at once (at
            least 1; default 1024); one more is answered ``503`` with ``Retry-After``.
        :param keepalive_interval: how long a stream may stay silent before the server shows it
            is alive, in seconds (more than 0; default 15): an SSE stream gets the comment
            ``: keepalive``, a WebSocket a Ping.
        :param tls_cert: a PEM certificate chain (the server's certificate first): serve HTTPS
            and WSS. Given with ``tls_key``, or neither.
        :param tls_key: the PEM private key of ``tls_cert`` (PKCS#8, PKCS#1 or SEC1).

        ``ValueError``: a bad address or setting (``tls_cert`` without ``tls_key`` or the other
        way round), a non-loopback address without a ``token_verifier``, or TLS files that
        cannot be used (unreadable, not PEM, a key that is not the certificate's: the message
        names the file); ``TypeError``: a setting of the wrong type; ``OSError``: the address
        cannot be bound or resolved.
        """
        return await _remote.serve_http(
            self._native,
            address,
            path=path,
            token_verifier=token_verifier,
            allowed_origins=allowed_origins,
            max_body_size=max_body_size,
            shutdown_grace=shutdown_grace,
            idle_timeout=idle_timeout,
            max_buffered_bytes=max_buffered_bytes,
            max_connections=max_connections,
            keepalive_interval=keepalive_interval,
            tls_cert=tls_cert,
            tls_key=tls_key,
        )

    def run_http(
        self,
        address: Union[str, Tuple[str, int]] = "127.0.0.1:0",
        *,
        ready: Optional[Callable[[RemoteServer], Any]] = None,
        **settings: Any,
    ) -> None:
        """Serves remotely (:meth:`serve_http`, whose keyword arguments it takes) from a plain
        (synchronous) call, on a new event loop, until SIGTERM or SIGINT; then shuts down
        gracefully and returns. ``ready(server)`` is called once the server listens (e.g. to say
        where: :attr:`RemoteServer.url`). The signals are handled only on the main thread."""
        _remote.run_http(self._native, address, ready, settings)

    def live_sessions(self) -> int:
        """How many sessions are live."""
        return int(self._native.live_sessions())

    def __repr__(self) -> str:
        return f"Agent(live_sessions={self.live_sessions()})"


def run_stdio(options: Options) -> None:
    """Serves an agent with ``options`` over stdio from a plain call, answering ``initialize``
    before asyncio is imported (a shortcut for ``Agent(options).run_stdio()``)."""
    Agent(options).run_stdio()


async def serve_stdio(options: Options) -> None:
    """Serves an agent with ``options`` over stdio (a shortcut for ``Agent(options).serve_stdio()``)."""
    await Agent(options).serve_stdio()


async def serve(options: Options, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Serves an agent with ``options`` over a pair of asyncio streams."""
    await Agent(options).serve(reader, writer)


async def serve_http(options: Options, address: Union[str, Tuple[str, int]] = "127.0.0.1:0", **settings: Any) -> RemoteServer:
    """Serves an agent with ``options`` remotely (a shortcut for
    ``await Agent(options).serve_http(address, **settings)``; the same keyword arguments)."""
    return await Agent(options).serve_http(address, **settings)


def run_http(
    options: Options,
    address: Union[str, Tuple[str, int]] = "127.0.0.1:0",
    *,
    ready: Optional[Callable[[RemoteServer], Any]] = None,
    **settings: Any,
) -> None:
    """Serves an agent with ``options`` remotely until SIGTERM or SIGINT (a shortcut for
    ``Agent(options).run_http(...)``)."""
    Agent(options).run_http(address, ready=ready, **settings)
