"""The host interfaces: what a product implements to drive the agent itself.

Implement :class:`SessionHost` (``new_session`` is required) and return :class:`LiveSession`
objects. Optional ``async def`` methods switch the matching ACP capability on when present:

- on the host: ``load_session`` (``loadSession``), ``resume_session``
  (``sessionCapabilities.resume``), ``list_sessions`` (``sessionCapabilities.list``),
  ``delete_session`` (``sessionCapabilities.delete``);
- authentication, on the host (see :class:`Authenticator`): ``auth_methods`` +
  ``requires_authentication`` + ``authenticate`` (``authMethods``, ``authenticate``), and
  ``logout`` (``auth.logout``);
- on a live session: ``shutdown`` (graceful ``session/close``), ``compact`` (``/compact``),
  ``config_options`` + ``set_config_option`` (``session/set_config_option`` and modes),
  ``submit_prompt`` (the whole :class:`acp_facade.Prompt` — slash command and ``_meta`` included —
  instead of ``submit``'s content), ``commands`` (host-defined slash commands) and ``set_control``
  (the :class:`acp_facade.SessionControl` to change the session's mode, options and commands).

Every host method must be ``async def`` (except the plain ``def`` ``auth_methods``,
``requires_authentication``, ``commands`` and ``set_control``); a plain ``def`` is a ``TypeError``
when the agent is built (or, for a live session, when it is returned), and so is an ``async def``
where a plain one is expected. Raise :class:`acp_facade.AcpError` (or a
subclass) to answer with its code; any other exception answers ``-32603`` with its text. A live
session publishes its events to its :attr:`LiveSession.events` hub; the core correlates and
translates them (see the Rust ``acp_facade::host`` docs for the contract of each method).
"""

from __future__ import annotations

from ._coro import iscoroutinefunction
from ._record import field, record
from . import _native
from ._bridge import DONE, dispatcher
from .client import Client, ClientCapabilities
from .acp import AvailableCommand, SystemPrompt, mcp_server_from_json
from .control import SessionControl
from .harness import Event, GateResponse
from .prompt import Prompt

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Awaitable, Dict, List, Optional, Sequence, Tuple
    from .acp import McpServer, Meta
    from .harness import ContentBlock

__all__ = [
    "AuthMethod",
    "Authenticator",
    "ConfigOption",
    "EventHub",
    "LiveSession",
    "LoadedSession",
    "MODE_CONFIG_ID",
    "SelectOption",
    "SessionCatalogEntry",
    "SessionHost",
    "Setup",
]

MODE_CONFIG_ID = "mode"
"""The config option id that is also served as the session's modes."""


@record
class Setup:
    """The validated setup of a session: absolute, canonical ``cwd``, extra roots, the MCP servers
    the client asked for (only of transports the agent advertises: stdio always, http and sse per
    ``Options.mcp_capabilities``), the request's ``meta`` (ACP ``_meta``), the session's handle
    on the client (:attr:`client`) and the client's :attr:`system_prompt`.

    Its JSON form, as the core hands it over: ``{"cwd": "/abs/path", "additionalDirectories":
    ["/abs/other"], "mcpServers": [<ACP McpServer>]}``, then ``"meta"`` when the request had a
    ``_meta`` and ``"systemPrompt"`` (an ACP ``SystemPrompt``) when it carried one the host
    takes."""

    cwd: str
    additional_directories: List[str] = field(default_factory=list)
    mcp_servers: List[McpServer] = field(default_factory=list)
    meta: Optional[Meta] = None
    client: Optional[Client] = field(default=None, compare=False)
    """The session's handle on the client: read and write files through the editor, run commands
    in its terminals, ask the user. Keep it with the session; it works once the session is
    established (after ``new_session``, ``load_session`` or ``resume_session`` returned) and until
    it closes. Calls made through it while a prompt is in flight are cancelled with that prompt,
    and go out after the updates of the events the session published before them. ``None`` only
    for a setup built by hand."""
    system_prompt: Optional[SystemPrompt] = None
    """The client's system prompt (``systemPrompt`` of the ``session/new``, ``load`` or
    ``resume`` request), only when the host takes it (:meth:`acp_facade.Options.system_prompt`);
    otherwise, and when the request carried none, ``None``. On ``load`` and ``resume``, ``None``
    means "keep the one the session has"."""

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client advertised (``fs``, ``terminal``, ``elicitation``, ``auth.terminal``,
        ``_meta``); nothing for a setup built by hand."""
        return self.client.capabilities if self.client is not None else ClientCapabilities()

    @classmethod
    def from_json(cls, data: Dict[str, Any], client: Any = None) -> "Setup":
        """Builds one from its JSON form (and the native handle on the client, if any)."""
        return cls(
            data["cwd"],
            list(data.get("additionalDirectories", [])),
            [mcp_server_from_json(s) for s in data.get("mcpServers", [])],
            data.get("meta"),
            None if client is None else Client(client),
            None if data.get("systemPrompt") is None else SystemPrompt.from_json(data["systemPrompt"]),
        )


@record
class SessionCatalogEntry:
    """One stored session, as ``list_sessions`` reports it."""

    session_id: str
    cwd: Optional[str] = None
    additional_directories: List[str] = field(default_factory=list)
    title: Optional[str] = None
    updated_at: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The JSON form."""
        return {
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "additionalDirectories": list(self.additional_directories),
            "title": self.title,
            "updatedAt": self.updated_at,
        }


@record
class SelectOption:
    """One value of a select config option."""

    value: str
    name: str
    description: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out: Dict[str, Any] = {"value": self.value, "name": self.name}
        if self.description is not None:
            out["description"] = self.description
        return out


@record
class ConfigOption:
    """A select config option (ACP ``SessionConfigOption``); id ``mode`` is also served as modes."""

    id: str
    name: str
    current_value: str
    options: List[SelectOption] = field(default_factory=list)
    category: Optional[str] = None
    description: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out: Dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "type": "select",
            "currentValue": self.current_value,
            "options": [o.to_json() for o in self.options],
        }
        if self.category is not None:
            out["category"] = self.category
        if self.description is not None:
            out["description"] = self.description
        return out


@record
class AuthMethod:
    """One authentication method advertised in ``initialize`` (an ACP ``AuthMethod``).

    ``type`` is ``"agent"`` (the default: the agent authenticates through ``authenticate``) or
    ``"terminal"`` (schema v1.21.0: a client that advertised ``auth.terminal`` reruns the agent's
    launch command with ``args`` and ``env`` in a terminal, where the process logs the user in and
    exits 0; it never sends ``authenticate`` for it). Terminal methods are listed only to clients
    that advertised ``auth.terminal``.
    """

    id: str
    name: str
    description: Optional[str] = None
    type: str = "agent"
    args: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)

    def to_tuple(self) -> Tuple[str, str, Optional[str]]:
        """The ``(id, name, description)`` of the method."""
        return (str(self.id), str(self.name), None if self.description is None else str(self.description))

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out: Dict[str, Any] = {"id": str(self.id), "name": str(self.name)}
        if self.description is not None:
            out["description"] = str(self.description)
        if self.type != "agent":
            out["type"] = self.type
            if self.args:
                out["args"] = [str(a) for a in self.args]
            if self.env:
                out["env"] = {str(k): str(v) for k, v in self.env.items()}
        return out


class Authenticator:
    """Authentication, mixed into a host (``class MyHost(SessionHost, Authenticator)``).

    A host with an ``authenticate`` method advertises :meth:`auth_methods` as ``authMethods``;
    while :meth:`requires_authentication` is true and the connection has not authenticated,
    ``session/new`` (and load/resume) answer ``-32000``. ``authenticate`` is called only with the
    id of an advertised method (any other id answers ``-32602``). Define ``async def logout(self)``
    to advertise ``auth.logout``; after it, sessions need authentication again.
    """

    def auth_methods(self) -> List[AuthMethod]:
        """The methods advertised in ``initialize`` (read once, when the options are built)."""
        raise NotImplementedError

    def requires_authentication(self) -> bool:
        """Whether new sessions need authentication right now (a plain ``def``: the core calls it
        synchronously). The default is ``True``."""
        return True

    async def authenticate(self, method_id: str) -> None:
        """Authenticates with the advertised method ``method_id``; raise to refuse
        (:class:`acp_facade.AcpError` answers its code)."""
        raise NotImplementedError


class EventHub:
    """A session's event fan-out: publish the session's events here, in order.

    ``publish`` is a cheap synchronous call into a Rust queue that delivers events in publish
    order; it returns an awaitable that is already complete unless the client reads slower than
    the session publishes and the queue is long (then awaiting it waits: back-pressure). Always
    ``await`` it: a caller that ignores it is refused with :class:`RuntimeError` once the queue
    holds its hard bound of events (nothing is queued then; memory stays bounded).
    """

    __slots__ = ("_native",)

    def __init__(self, capacity: int = 256) -> None:
        self._native = _native.EventHub(capacity)

    def publish(self, event: Event) -> Awaitable[None]:
        """Publishes ``event`` to every subscriber, after every event published before it."""
        if self._native.publish(event):
            return dispatcher.wait(self._native.drained)
        return DONE

    def subscriber_count(self) -> int:
        """How many subscriptions are alive."""
        return self._native.subscriber_count()

    def __repr__(self) -> str:
        return f"EventHub(subscribers={self.subscriber_count()})"


class LiveSession:
    """A session the host is running. Subclass it and implement the ``async def`` methods.

    ``id`` becomes the ACP ``sessionId``; ``events`` is the hub the session publishes to.

    Optional, besides those the module doc lists: ``async def submit_prompt(self, prompt)`` is
    called instead of ``submit`` with the whole :class:`acp_facade.Prompt` (typed content, the
    slash command it invokes, the request's ``_meta``); ``def commands(self)`` returns the
    :class:`acp_facade.AvailableCommand` list the session starts with (read once, when the session
    is returned; advertised beside ``compact`` from its first prompt on; a prompt ``/name input``
    naming one reaches ``submit_prompt`` with ``prompt.command`` set); ``def set_control(self,
    control)`` receives the session's :class:`acp_facade.SessionControl` once the facade serves it
    (it must not block).
    """

    def __init__(self, id: str, events: Optional[EventHub] = None) -> None:
        self.id = id
        self.events = events if events is not None else EventHub()

    async def submit(self, prompt: List[ContentBlock]) -> str:
        """Starts a turn; returns the command id its ``TurnStarted`` carries."""
        raise NotImplementedError

    async def interrupt(self) -> None:
        """Interrupts the running turn (it should end with ``TurnInterrupted``)."""
        raise NotImplementedError

    async def respond_gate(self, gate_id: str, response: GateResponse) -> None:
        """Answers a gate the session's loop opened."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"


@record
class LoadedSession:
    """What ``load_session`` returns: the live session and its Enduring history, oldest first."""

    session: LiveSession
    history: List[Event] = field(default_factory=list)


class SessionHost:
    """Creates sessions: ``async def new_session(setup) -> LiveSession`` is required.

    Define ``load_session``, ``resume_session``, ``list_sessions`` or ``delete_session`` (all
    ``async def``) to switch the matching capability on.
    """

    async def new_session(self, setup: Setup) -> LiveSession:
        """Creates a live session for ``session/new``."""
        raise NotImplementedError


_HOST_OPTIONAL = ("load_session", "resume_session", "list_sessions", "delete_session")
_LIVE_REQUIRED = ("submit", "interrupt", "respond_gate")
_LIVE_ASYNC = (*_LIVE_REQUIRED, "shutdown", "compact", "config_options", "set_config_option", "submit_prompt")
_LIVE_SYNC = ("commands", "set_control")


def require_async(obj: object, names: Sequence[str], what: str) -> None:
    """Raises ``TypeError`` unless each method in ``names`` that ``obj`` has is ``async def``."""
    for name in names:
        method = getattr(obj, name, None)
        if method is not None and not iscoroutinefunction(method):
            raise TypeError(f"{what}.{name} must be an `async def` method, not a plain function")


def require_sync(obj: object, names: Sequence[str], what: str) -> None:
    """Raises ``TypeError`` if a method in ``names`` that ``obj`` has is ``async def``."""
    for name in names:
        method = getattr(obj, name, None)
        if method is not None and iscoroutinefunction(method):
            raise TypeError(f"{what}.{name} must be a plain `def` method, not `async def`")


def commands_json(commands: Sequence[Any]) -> List[Any]:
    """Slash commands (:class:`acp_facade.AvailableCommand` or their wire form) as the native
    module takes them."""
    return [c.to_json() if isinstance(c, AvailableCommand) else c for c in commands]


class _HostParts:
    """The optional parts a host object implements, as the native ``Options.for_host`` reads
    them (by attribute)."""

    __slots__ = ("load_session", "resume_session", "list_sessions", "delete_session")

    def __init__(self, host: object) -> None:
        self.load_session: bool = callable(getattr(host, "load_session", None))
        """``load_session`` (``loadSession``)."""
        self.resume_session: bool = callable(getattr(host, "resume_session", None))
        """``resume_session`` (``sessionCapabilities.resume``)."""
        self.list_sessions: bool = callable(getattr(host, "list_sessions", None))
        """``list_sessions`` (``sessionCapabilities.list``)."""
        self.delete_session: bool = callable(getattr(host, "delete_session", None))
        """``delete_session`` (``sessionCapabilities.delete``)."""


class _AuthParts:
    """The authentication part of a host or authenticator, as the native module reads it (by
    attribute): the advertised methods in their ACP wire form, and whether it has ``logout``."""

    __slots__ = ("methods", "logout")

    def __init__(self, methods: List[Dict[str, Any]], logout: bool) -> None:
        self.methods = methods
        self.logout = logout


class _LiveParts:
    """The optional parts a live session implements, as the native module reads them (by
    attribute)."""

    __slots__ = ("shutdown", "compact", "config_options", "submit_prompt", "set_control")

    def __init__(self, session: object) -> None:
        self.shutdown: bool = callable(getattr(session, "shutdown", None))
        self.compact: bool = callable(getattr(session, "compact", None))
        self.config_options: bool = callable(getattr(session, "config_options", None)) and callable(
            getattr(session, "set_config_option", None)
        )
        self.submit_prompt: bool = callable(getattr(session, "submit_prompt", None))
        self.set_control: bool = callable(getattr(session, "set_control", None))


class _LiveReturn:
    """A live session as a session-opening call hands it to the native module (read by
    attribute)."""

    __slots__ = ("id", "hub", "adapter", "parts", "commands")

    def __init__(self, id: str, hub: Any, adapter: _LiveAdapter, parts: _LiveParts, commands: List[Any]) -> None:
        self.id = id
        self.hub = hub
        self.adapter = adapter
        self.parts = parts
        self.commands = commands


class _LoadedReturn:
    """What ``load_session`` hands the native module (read by attribute): the live session and
    its history in wire form."""

    __slots__ = ("live", "history")

    def __init__(self, live: _LiveReturn, history: List[Dict[str, Any]]) -> None:
        self.live = live
        self.history = history


def host_parts(host: object) -> _HostParts:
    """Which optional host parts ``host`` implements (checked to be ``async def``)."""
    if getattr(host, "new_session", None) is None:
        raise TypeError(f"{type(host).__name__} has no `new_session` method")
    require_async(host, ("new_session", *_HOST_OPTIONAL, "authenticate", "logout"), type(host).__name__)
    return _HostParts(host)


def host_auth(host: object) -> Optional[_AuthParts]:
    """The authentication part of ``host`` as the native module takes it (the methods in their
    ACP wire form, and whether it has ``logout``), or ``None`` when ``host`` has no
    ``authenticate`` method."""
    if not callable(getattr(host, "authenticate", None)):
        return None
    name = type(host).__name__
    require_sync(host, ("auth_methods", "requires_authentication"), name)
    auth_methods = getattr(host, "auth_methods", None)
    methods: List[Dict[str, Any]] = []
    for method in auth_methods() if callable(auth_methods) else []:
        if isinstance(method, AuthMethod):
            methods.append(method.to_json())
        else:
            id_, label, *rest = method
            methods.append(AuthMethod(id_, label, rest[0] if rest else None).to_json())
    return _AuthParts(methods, callable(getattr(host, "logout", None)))


def _live(session: LiveSession) -> _LiveReturn:
    name = type(session).__name__
    for required in _LIVE_REQUIRED:
        if not callable(getattr(session, required, None)):
            raise TypeError(f"{name} has no `{required}` method")
    require_async(session, _LIVE_ASYNC, name)
    require_sync(session, _LIVE_SYNC, name)
    events = getattr(session, "events", None)
    if not isinstance(events, EventHub):
        raise TypeError(f"{name}.events must be an acp_facade.EventHub")
    commands = getattr(session, "commands", None)
    listed = commands_json(commands()) if callable(commands) else []
    return _LiveReturn(str(session.id), events._native, _LiveAdapter(session), _LiveParts(session), listed)


class _LiveAdapter:
    """Turns the core's plain data into typed objects for one live session."""

    __slots__ = ("_s",)

    def __init__(self, session: Any) -> None:
        self._s = session

    async def submit(self, prompt: List[ContentBlock]) -> str:
        return str(await self._s.submit(prompt))

    async def submit_prompt(self, prompt: Dict[str, Any]) -> str:
        return str(await self._s.submit_prompt(Prompt.from_json(prompt)))

    def set_control(self, control: Any) -> None:
        self._s.set_control(SessionControl(control))

    async def interrupt(self) -> None:
        await self._s.interrupt()

    async def respond_gate(self, gate_id: str, response: Dict[str, Any]) -> None:
        await self._s.respond_gate(gate_id, GateResponse.from_json(response))

    async def shutdown(self) -> None:
        await self._s.shutdown()

    async def compact(self) -> str:
        return str(await self._s.compact())

    async def config_options(self) -> List[Any]:
        return [o.to_json() if hasattr(o, "to_json") else o for o in await self._s.config_options()]

    async def set_config_option(self, config_id: str, value: Any) -> None:
        await self._s.set_config_option(config_id, value)


class HostAdapter:
    """Turns the core's plain data into typed objects for the product's host object."""

    __slots__ = ("_h",)

    def __init__(self, host: Any) -> None:
        self._h = host

    async def new_session(self, setup: Dict[str, Any], client: Any = None) -> Any:
        return _live(await self._h.new_session(Setup.from_json(setup, client)))

    async def load_session(self, session_id: str, setup: Dict[str, Any], client: Any = None) -> Any:
        loaded = await self._h.load_session(session_id, Setup.from_json(setup, client))
        if not isinstance(loaded, LoadedSession):
            raise TypeError("load_session must return an acp_facade.LoadedSession")
        return _LoadedReturn(_live(loaded.session), [e.to_json() for e in loaded.history])

    async def resume_session(self, session_id: str, setup: Dict[str, Any], client: Any = None) -> Any:
        return _live(await self._h.resume_session(session_id, Setup.from_json(setup, client)))

    async def list_sessions(self) -> List[Any]:
        return [e.to_json() if hasattr(e, "to_json") else e for e in await self._h.list_sessions()]

    async def delete_session(self, session_id: str) -> None:
        await self._h.delete_session(session_id)

    def requires_authentication(self) -> bool:
        method = getattr(self._h, "requires_authentication", None)
        return True if method is None else bool(method())

    async def authenticate(self, method_id: str) -> None:
        await self._h.authenticate(method_id)

    async def logout(self) -> None:
        await self._h.logout()
