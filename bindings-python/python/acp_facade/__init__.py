"""acp-facade for Python: a complete Agent Client Protocol (ACP) agent, with Rust owning the protocol.

Two levels, as in the Rust crate:

- the **turn runner**: write ``async def run_turn(turn)`` on a :class:`TurnRunner`, build a
  :class:`Runner` over a :class:`SqliteStore` and serve it::

      runner = Runner(SqliteStore("sessions.sqlite"), MyTurnRunner())
      await runner.agent().serve_stdio()

  (or over a :class:`PostgresStore` ``("postgres://…")``, whose sessions every process using the
  same database shares, each live in one process at a time);

- the **host interfaces**: implement :class:`SessionHost` and :class:`LiveSession` with
  ``async def`` methods and serve ``Agent(Options(host))``; mix :class:`Authenticator` into the
  host to require authentication.

Serving is a coroutine in the caller's asyncio loop. Errors are :class:`AcpError` (with ``code``,
``message``, ``data``) and its subclasses. Nothing in this package writes to stdout.
"""

from ._native import __version__
from .errors import (
    AcpError,
    AuthRequired,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    RequestCancelled,
    ResourceNotFound,
)
from .agent import Agent, Options, serve, serve_stdio
from .harness import (
    AiMessage,
    ApprovalAction,
    CompactWaiterRejected,
    CompactWaiterResolved,
    ContentBlock,
    ContextMeasured,
    Event,
    EventClass,
    EventKind,
    Gate,
    GateKind,
    GateOpened,
    GateResolved,
    GateResolver,
    GateResponse,
    Message,
    SessionMetaChanged,
    StepDone,
    StopReason,
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
from .runner import MemoryStore, Permission, PostgresStore, Runner, SqliteStore, Turn, TurnRunner

__all__ = [
    "MODE_CONFIG_ID",
    "AcpError",
    "Agent",
    "AiMessage",
    "ApprovalAction",
    "AuthMethod",
    "AuthRequired",
    "Authenticator",
    "CompactWaiterRejected",
    "CompactWaiterResolved",
    "ConfigOption",
    "ContentBlock",
    "ContextMeasured",
    "Event",
    "EventClass",
    "EventHub",
    "EventKind",
    "Gate",
    "GateKind",
    "GateOpened",
    "GateResolved",
    "GateResolver",
    "GateResponse",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LiveSession",
    "LoadedSession",
    "MemoryStore",
    "Message",
    "MethodNotFound",
    "Options",
    "ParseError",
    "Permission",
    "PostgresStore",
    "RequestCancelled",
    "ResourceNotFound",
    "Runner",
    "SelectOption",
    "SessionCatalogEntry",
    "SessionHost",
    "SessionMetaChanged",
    "Setup",
    "SqliteStore",
    "StepDone",
    "StopReason",
    "TokenChannel",
    "TokenDelta",
    "ToolCallCompleted",
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
    "UserMessage",
    "Visibility",
    "__version__",
    "plain_text",
    "serve",
    "serve_stdio",
    "text_block",
]
