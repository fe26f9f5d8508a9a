"""acp-facade for Python: a complete Agent Client Protocol (ACP) agent, with Rust owning the protocol.

Two levels, as in the Rust crate:

- the **turn runner**: write ``async def run_turn(turn)`` on a :class:`TurnRunner`, build a
  :class:`Runner` over a :class:`SqliteStore` and serve it::

      runner = Runner(SqliteStore("sessions.sqlite"), MyTurnRunner())
      runner.agent().run_stdio()  # or, inside a loop of your own: await runner.agent().serve_stdio()

  (or over a :class:`PostgresStore` ``("postgres://…")``, whose sessions every process using the
  same database shares, each live in one process at a time);

- the **host interfaces**: implement :class:`SessionHost` and :class:`LiveSession` with
  ``async def`` methods and serve ``Agent(Options(host))``; mix :class:`Authenticator` into the
  host to require authentication.

A session's :attr:`Setup.client` and a turn's :attr:`Turn.client` are the agent's handle on the
editor (:class:`Client`): files through its buffers, commands in its terminals
(:class:`Terminal`), questions to the user.

Prompts beyond text (images, audio, embedded resources), MCP servers, plans, costs, slash
commands and the client's system prompt are typed (:mod:`acp_facade.acp`); a turn also shows
notices, plans with ids and subagents to a client that advertised them (:class:`Turn`), and reads
its session's earlier turns (:meth:`Turn.history`); a host changes its own session through
:class:`SessionControl` (a runner turn through its :class:`Turn`); extension methods are registered
on :class:`Options`.

Serving is a coroutine in the caller's asyncio loop (over stdio, or remotely over HTTP and WebSocket
with :meth:`Agent.serve_http`, see :mod:`acp_facade.remote`), or a plain call (:meth:`Agent.run_http`
until SIGTERM; :meth:`Agent.run_stdio`, which starts serving at once and answers ``initialize``
while asyncio is still being imported): this package does not import asyncio itself. Errors are :class:`AcpError` (with ``code``,
``message``, ``data``) and its subclasses (:class:`ClientError` and its kinds for failed calls to
the client). Nothing in this package writes to stdout.
"""

from . import _hints
from ._native import __version__
from .errors import (
    AcpError,
    AuthRequired,
    ClientError,
    InternalError,
    InvalidArgumentError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    NotEstablishedError,
    ParseError,
    ProtocolError,
    RejectedError,
    ReleasedError,
    RelativePathError,
    RequestCancelled,
    ResourceNotFound,
    UnsupportedError,
)
from .agent import Agent, Options, run_http, run_stdio, serve, serve_http, serve_stdio
from .remote import RemoteServer
from .client import (
    Client,
    ClientCapabilities,
    ElicitationAnswer,
    Terminal,
    TerminalExitStatus,
    TerminalOutput,
    UrlElicitation,
)
from .acp import (
    AudioContent,
    AvailableCommand,
    BlobResourceContents,
    Cost,
    Diff,
    EmbeddedResource,
    EnvVariable,
    HttpHeader,
    ImageContent,
    McpCapabilities,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
    NoticeSeverity,
    Plan,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    PromptCapabilities,
    ResourceLink,
    SystemPrompt,
    TerminalContent,
    TextContent,
    TextResourceContents,
    ToolCallLocation,
)
from .control import SessionControl
from .harness import (
    AiMessage,
    ApprovalAction,
    CompactionChanged,
    CompactionSummary,
    CompactWaiterRejected,
    CompactWaiterResolved,
    ContextMeasured,
    Event,
    EventClass,
    Gate,
    GateKind,
    GateOpened,
    GateResolved,
    GateResolver,
    GateResponse,
    Notice,
    PlanChanged,
    PlanRemoved,
    PlanUpdated,
    ResponseMeta,
    SessionMessage,
    SessionMessageChunk,
    SessionMetaChanged,
    StepDone,
    StopReason,
    SubagentChanged,
    TokenChannel,
    TokenDelta,
    ToolCallCompleted,
    ToolCallProgress,
    ToolCallRequest,
    ToolCallStarted,
    ToolCallStatus,
    ToolKind,
    ToolResultMessage,
    TurnDone,
    TurnFailed,
    TurnInterrupted,
    TurnStarted,
    UserMessage,
    Visibility,
    plain_text,
    text_block,
)
from .host import (
    MODE_CONFIG_ID,
    AuthMethod,
    Authenticator,
    ConfigOption,
    EventHub,
    LiveSession,
    LoadedSession,
    SelectOption,
    SessionCatalogEntry,
    SessionHost,
    Setup,
)
from .prompt import Prompt, SlashCommand
from .runner import (
    AssistantEntry,
    HistoryEntry,
    MemoryStore,
    Permission,
    PermissionAnswer,
    PostgresStore,
    Reply,
    Runner,
    SqliteStore,
    Subagent,
    SummaryEntry,
    ThoughtEntry,
    ToolCallEntry,
    Turn,
    TurnRunner,
    UserEntry,
)


# The type aliases are made when looked up (by `__getattr__` below and in their modules):
# they need typing, which start-up does not import (ARCHITECTURE.md, "Start-up (Python)").
TYPE_CHECKING = False  # typing.TYPE_CHECKING
if TYPE_CHECKING:
    from .acp import McpServer, Meta, PromptBlock, ToolCallContent
    from .client import ElicitationSchema
    from .extensions import ExtensionMethod, ExtensionNotification
    from .harness import ContentBlock, EventKind, Message
    from .remote import TokenVerifier

_ALIASES = {
    "ContentBlock": "harness",
    "ElicitationSchema": "client",
    "EventKind": "harness",
    "ExtensionMethod": "extensions",
    "ExtensionNotification": "extensions",
    "McpServer": "acp",
    "Message": "harness",
    "Meta": "acp",
    "PromptBlock": "acp",
    "ToolCallContent": "acp",
    "TokenVerifier": "remote",
}

__all__ = [
    "AcpError",
    "Agent",
    "AiMessage",
    "bind_type_hints",
    "ApprovalAction",
    "AssistantEntry",
    "AudioContent",
    "AuthMethod",
    "AuthRequired",
    "Authenticator",
    "Client",
    "ClientCapabilities",
    "ClientError",
    "AvailableCommand",
    "BlobResourceContents",
    "CompactionChanged",
    "CompactionSummary",
    "CompactWaiterRejected",
    "CompactWaiterResolved",
    "ConfigOption",
    "ContentBlock",
    "ContextMeasured",
    "ElicitationAnswer",
    "ElicitationSchema",
    "Cost",
    "Diff",
    "EmbeddedResource",
    "EnvVariable",
    "Event",
    "EventClass",
    "EventHub",
    "EventKind",
    "ExtensionMethod",
    "ExtensionNotification",
    "Gate",
    "GateKind",
    "GateOpened",
    "GateResolved",
    "GateResolver",
    "GateResponse",
    "HistoryEntry",
    "HttpHeader",
    "ImageContent",
    "InternalError",
    "InvalidArgumentError",
    "InvalidParams",
    "InvalidRequest",
    "LiveSession",
    "LoadedSession",
    "MODE_CONFIG_ID",
    "McpCapabilities",
    "McpServer",
    "McpServerHttp",
    "McpServerSse",
    "McpServerStdio",
    "MemoryStore",
    "Message",
    "Meta",
    "MethodNotFound",
    "NotEstablishedError",
    "Notice",
    "NoticeSeverity",
    "Options",
    "ParseError",
    "Permission",
    "PermissionAnswer",
    "PostgresStore",
    "ProtocolError",
    "RejectedError",
    "RelativePathError",
    "RemoteServer",
    "ReleasedError",
    "Reply",
    "Plan",
    "PlanChanged",
    "PlanEntry",
    "PlanEntryPriority",
    "PlanEntryStatus",
    "PlanRemoved",
    "PlanUpdated",
    "PostgresStore",
    "Prompt",
    "PromptBlock",
    "PromptCapabilities",
    "RequestCancelled",
    "ResourceLink",
    "ResourceNotFound",
    "ResponseMeta",
    "Runner",
    "SelectOption",
    "SessionCatalogEntry",
    "SessionControl",
    "SessionHost",
    "SessionMessage",
    "SessionMessageChunk",
    "SessionMetaChanged",
    "Setup",
    "SlashCommand",
    "SqliteStore",
    "StepDone",
    "StopReason",
    "Subagent",
    "SubagentChanged",
    "SummaryEntry",
    "SystemPrompt",
    "Terminal",
    "TerminalContent",
    "TerminalExitStatus",
    "TerminalOutput",
    "TextContent",
    "TextResourceContents",
    "ThoughtEntry",
    "TokenChannel",
    "TokenDelta",
    "ToolCallCompleted",
    "TokenVerifier",
    "ToolCallContent",
    "ToolCallEntry",
    "ToolCallLocation",
    "ToolCallProgress",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolCallStatus",
    "ToolKind",
    "ToolResultMessage",
    "Turn",
    "TurnDone",
    "TurnFailed",
    "TurnInterrupted",
    "TurnRunner",
    "TurnStarted",
    "UnsupportedError",
    "UrlElicitation",
    "UserEntry",
    "UserMessage",
    "Visibility",
    "__version__",
    "plain_text",
    "run_http",
    "run_stdio",
    "serve",
    "serve_http",
    "serve_stdio",
    "text_block",
]


def bind_type_hints() -> None:
    """Makes ``typing.get_type_hints`` — and what is built on it: typeguard, and pydantic and cattrs
    for the records, which are dataclasses — read every class and function of the package from now
    on. (The wire types of :mod:`acp_facade.acp` are plain classes, which pydantic does not take
    apart: their ``to_json()``/``from_json()`` convert them.)

    The package imports its typing names (``Optional``, ``Any``, its type aliases) for type
    checkers only, so that an agent starts without importing :mod:`typing`. They are bound by
    themselves once an event loop serves an agent, and a record resolves its own annotations when
    it is first used as a dataclass (``dataclasses.fields``); call this first where those tools run
    before anything is served (a test, a schema generator). Never raises.
    """
    _hints.bind()


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """A type alias of ``__all__``, its module's (see ``_ALIASES``); not stored in this module's
        globals, which a lookup so never changes."""
        module = _ALIASES.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(globals()[module], name)  # the submodule, imported above

    def __dir__() -> list[str]:
        """The module's names, the type aliases (made on lookup, see ``__getattr__``) included."""
        return sorted(set(globals()) | set(_ALIASES))
