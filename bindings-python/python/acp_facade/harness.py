"""The runtime model a host speaks: events, messages, gates and their enums.

These mirror ``acp_facade::harness`` in the Rust core. Every class is a dataclass with keyword
constructors and a readable repr, converts to the core's JSON form with ``to_json()`` and back with
``from_json()``. Content blocks are ACP ``ContentBlock`` values in their wire (JSON) form, for
example ``text_block("hi") == {"type": "text", "text": "hi"}``.

A tool call's content items are typed (:class:`acp_facade.Diff`,
:class:`acp_facade.TerminalContent`, content blocks) or ACP tool-call content in its wire form:
content blocks (bare, as above, or wrapped ``{"type": "content", "content": block}``), diffs
(``{"type": "diff", "path", "oldText", "newText"}``) and terminals (``{"type": "terminal",
"terminalId"}``, a :class:`acp_facade.Terminal`'s ``content``); its locations are
:class:`acp_facade.ToolCallLocation` or ``{"path": absolute path, "line": 1-based line or absent}``.
"""

from __future__ import annotations

import itertools
from enum import Enum

from . import _hints
from ._record import field, record
from .acp import Cost, Plan, ToolCallLocation, tool_content_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Dict, List, Optional, Union
    from .acp import Meta, ToolCallContent

__all__ = [
    "AiMessage",
    "ApprovalAction",
    "CompactWaiterRejected",
    "CompactWaiterResolved",
    "CompactionChanged",
    "CompactionSummary",
    "ContentBlock",
    "ContextMeasured",
    "Event",
    "EventClass",
    "EventKind",
    "Gate",
    "GateKind",
    "GateOpened",
    "GateResolved",
    "GateResolver",
    "GateResponse",
    "Message",
    "Notice",
    "PlanChanged",
    "PlanRemoved",
    "PlanUpdated",
    "ResponseMeta",
    "SessionMessage",
    "SessionMessageChunk",
    "SessionMetaChanged",
    "StepDone",
    "StopReason",
    "SubagentChanged",
    "TokenChannel",
    "TokenDelta",
    "ToolCallCompleted",
    "ToolCallProgress",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolCallStatus",
    "ToolKind",
    "ToolResultMessage",
    "TurnDone",
    "TurnFailed",
    "TurnInterrupted",
    "TurnStarted",
    "UserMessage",
    "Visibility",
    "plain_text",
    "text_block",
]

if TYPE_CHECKING:  # the type aliases, made at run time when first used (`__getattr__`, below)
    ContentBlock = Dict[str, Any]
    """An ACP content block in its wire form, e.g. ``{"type": "text", "text": "hi"}``."""


def text_block(text: str) -> ContentBlock:
    """A text content block."""
    return {"type": "text", "text": text}


def _set(out: Dict[str, Any], **fields: Any) -> Dict[str, Any]:
    """``out`` with every field of ``fields`` that is not ``None`` (in its JSON form)."""
    for name, value in fields.items():
        if value is not None:
            out[name] = _wire(value)
    return out


def plain_text(content: List[ContentBlock]) -> str:
    """The concatenated text of the text blocks in ``content``."""
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


class StopReason(str, Enum):
    """Why a turn ended (ACP ``StopReason``)."""

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    MAX_TURN_REQUESTS = "max_turn_requests"
    REFUSAL = "refusal"
    CANCELLED = "cancelled"


class ToolKind(str, Enum):
    """The kind of a tool call (ACP ``ToolKind``), used by clients to pick an icon."""

    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    MOVE = "move"
    SEARCH = "search"
    EXECUTE = "execute"
    THINK = "think"
    FETCH = "fetch"
    SWITCH_MODE = "switch_mode"
    OTHER = "other"


class ToolCallStatus(str, Enum):
    """The status of a tool call (ACP ``ToolCallStatus``)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"


class EventClass(str, Enum):
    """Durability of an event: ``EPHEMERAL`` (live only) or ``ENDURING`` (journaled, replayed)."""

    EPHEMERAL = "ephemeral"
    ENDURING = "enduring"


class Visibility(str, Enum):
    """Who may see an event: only ``PUBLIC`` events ever reach the client."""

    PUBLIC = "public"
    INTERNAL = "internal"


class TokenChannel(str, Enum):
    """Which stream a token delta belongs to: the reply or reasoning."""

    MESSAGE = "message"
    THOUGHT = "thought"


class ApprovalAction(str, Enum):
    """The controls of a permission gate."""

    APPROVE = "approve"
    APPROVE_ALWAYS = "approve_always"
    DENY = "deny"


class GateKind(str, Enum):
    """What a gate asks for."""

    PERMISSION = "permission"
    ASK_USER = "ask_user"
    FORM = "form"
    OPEN_URL = "open_url"


class GateResolver(str, Enum):
    """Who resolves a gate."""

    LOOP = "loop"
    SESSION = "session"


def _wire(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


@record
class UserMessage:
    """A user's message: the prompt of a turn."""

    content: List[ContentBlock] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        return {"content": list(self.content)}

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "UserMessage":
        """Builds one from the core's JSON form."""
        return cls(content=list(data.get("content", [])))


@record
class ToolCallRequest:
    """One tool call a model asked for, as it was announced: its title (``name``), kind and input;
    ``locations`` are the files (and lines) it works on, ``tool_name`` its programmatic name (the
    tool as the model calls it: ``name`` on the wire), if it has one."""

    call_id: str
    name: str
    kind: ToolKind = ToolKind.OTHER
    input: Any = None
    locations: List[Dict[str, Any]] = field(default_factory=list)
    tool_name: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        out = {"call_id": self.call_id, "name": self.name, "kind": _wire(self.kind), "input": self.input}
        if self.locations:
            out["locations"] = list(self.locations)
        return _set(out, tool_name=self.tool_name)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ToolCallRequest":
        """Builds one from the core's JSON form."""
        return cls(
            data["call_id"],
            data["name"],
            ToolKind(data.get("kind", "other")),
            data.get("input"),
            list(data.get("locations") or []),
            data.get("tool_name"),
        )


@record
class AiMessage:
    """A model's message: the text of one step, its reasoning and the tool calls it asked for."""

    content: List[ContentBlock] = field(default_factory=list)
    thoughts: List[ContentBlock] = field(default_factory=list)
    tool_calls: List[ToolCallRequest] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        return {
            "role": "ai",
            "content": list(self.content),
            "thoughts": list(self.thoughts),
            "tool_calls": [t.to_json() for t in self.tool_calls],
        }


@record
class ToolResultMessage:
    """The result of one tool call: its final content (content blocks, diffs, terminals), and
    its title, kind, locations, raw input and output and programmatic name (``tool_name``) where
    they changed since it was announced (``None``: unchanged)."""

    call_id: str
    output: List[ContentBlock] = field(default_factory=list)
    is_error: bool = False
    title: Optional[str] = None
    kind: Optional[ToolKind] = None
    locations: Optional[List[Dict[str, Any]]] = None
    raw_input: Any = None
    raw_output: Any = None
    tool_name: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        out = {"role": "tool_result", "call_id": self.call_id, "output": list(self.output), "is_error": self.is_error}
        return _set(
            out,
            title=self.title,
            kind=self.kind,
            locations=self.locations,
            raw_input=self.raw_input,
            raw_output=self.raw_output,
            tool_name=self.tool_name,
        )


if TYPE_CHECKING:
    Message = Union[UserMessage, AiMessage, ToolResultMessage]
    """One message of a conversation."""


def _message_to_json(message: Message) -> Dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"role": "user", **message.to_json()}
    return message.to_json()


def _message_from_json(data: Dict[str, Any]) -> Message:
    role = data.get("role")
    if role == "user":
        return UserMessage.from_json(data)
    if role == "ai":
        return AiMessage(
            content=list(data.get("content", [])),
            thoughts=list(data.get("thoughts", [])),
            tool_calls=[ToolCallRequest.from_json(t) for t in data.get("tool_calls", [])],
        )
    kind = data.get("kind")
    return ToolResultMessage(
        data["call_id"],
        list(data.get("output", [])),
        bool(data.get("is_error", False)),
        data.get("title"),
        None if kind is None else ToolKind(kind),
        data.get("locations"),
        data.get("raw_input"),
        data.get("raw_output"),
        data.get("tool_name"),
    )


@record
class Gate:
    """A point where a turn waits for an answer (a permission request, a question...).

    A permission gate offers ``controls`` and then ``options``: host-defined ACP permission
    options (``{"optionId", "name", "kind"}``, e.g. a ``reject_always`` one), answered
    :meth:`GateResponse.selected`. A form gate carries its ``schema`` (an ACP elicitation schema),
    an open-URL gate its absolute ``url``.
    """

    id: str
    kind: GateKind
    title: str
    resolver: GateResolver = GateResolver.LOOP
    tool_call_id: Optional[str] = None
    controls: List[ApprovalAction] = field(default_factory=list)
    options: List[Dict[str, Any]] = field(default_factory=list)
    schema: Optional[Dict[str, Any]] = None
    url: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        out: Dict[str, Any] = {
            "id": self.id,
            "kind": _wire(self.kind),
            "resolver": _wire(self.resolver),
            "tool_call_id": self.tool_call_id,
            "title": self.title,
            "controls": [_wire(c) for c in self.controls],
        }
        if self.options:
            out["options"] = list(self.options)
        return _set(out, schema=self.schema, url=self.url)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Gate":
        """Builds one from the core's JSON form."""
        return cls(
            id=data["id"],
            kind=GateKind(data["kind"]),
            title=data.get("title", ""),
            resolver=GateResolver(data.get("resolver", "loop")),
            tool_call_id=data.get("tool_call_id"),
            controls=[ApprovalAction(c) for c in data.get("controls", [])],
            options=list(data.get("options") or []),
            schema=data.get("schema"),
            url=data.get("url"),
        )


@record
class GateResponse:
    """An answer to a gate: an approval action (``approval``), free-form values (``values``: an
    ask-user question's text, a form's values, an open-URL step's consent), a host-defined
    permission option (``selected``: its id), or the user declining (``declined``) or dismissing
    the question without choosing (``dismissed``)."""

    approval: Optional[ApprovalAction] = None
    values: Any = None
    selected: Optional[str] = None
    declined: bool = False
    dismissed: bool = False

    def to_json(self) -> Any:
        """The core's JSON form (``{"approval": …}``, ``{"values": …}``, ``{"selected": id}``,
        ``"declined"`` or ``"dismissed"``)."""
        if self.approval is not None:
            return {"approval": _wire(self.approval)}
        if self.selected is not None:
            return {"selected": self.selected}
        if self.declined:
            return "declined"
        if self.dismissed:
            return "dismissed"
        return {"values": self.values}

    @classmethod
    def from_json(cls, data: Any) -> "GateResponse":
        """Builds one from the core's JSON form."""
        if data == "declined":
            return cls(declined=True)
        if data == "dismissed":
            return cls(dismissed=True)
        if "approval" in data:
            return cls(approval=ApprovalAction(data["approval"]))
        if "selected" in data:
            return cls(selected=str(data["selected"]))
        return cls(values=data.get("values"))


class _Kind:
    """Shared JSON conversion of the event kinds."""

    # Each kind's `type`, a class constant. Declared a `ClassVar` for type checkers only:
    # `dataclass` would need the name `ClassVar` bound at run time, where typing is not imported
    # (ARCHITECTURE.md, "Start-up (Python)"); unannotated, it is no field either.
    if TYPE_CHECKING:
        type: ClassVar[str]
    type = ""

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        out: Dict[str, Any] = {"type": self.type}
        for name in self.__dataclass_fields__:  # type: ignore[attr-defined]
            value = getattr(self, name)
            if name == "messages":
                value = [_message_to_json(m) for m in value]
            out[name] = _wire(value)
        return out


@record
class TurnStarted(_Kind):
    """A turn began; the event's ``command_id`` names the submitted command."""

    type = "turn_started"
    message: UserMessage = field(default_factory=UserMessage)


@record
class TokenDelta(_Kind):
    """A piece of streamed output."""

    type = "token_delta"
    text: str = ""
    channel: TokenChannel = TokenChannel.MESSAGE


def _tool_content(items: Optional[List[Any]]) -> Optional[List[Dict[str, Any]]]:
    """Tool call content in the core's form: wire dicts as they are, typed values converted."""
    if items is None:
        return None
    return [c if isinstance(c, dict) else tool_content_json(c) for c in items]


class _ToolCallKind(_Kind):
    """The JSON form of the tool call kinds: fields that are ``None`` are left out (the core reads
    an absent field as unchanged), typed content and locations converted."""

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        out: Dict[str, Any] = {"type": self.type}
        for name in self.__dataclass_fields__:  # type: ignore[attr-defined]
            value = getattr(self, name)
            if name in ("content", "output"):
                value = _tool_content(value)
            if value is not None or name == "input":
                out[name] = _wire(value)
        return out


def _tool_extras(args: Dict[str, Any]) -> Dict[str, Any]:
    """The optional fields of a tool call kind's core form, typed."""
    extras: Dict[str, Any] = {}
    for name in ("title", "raw_input", "raw_output", "content", "tool_name"):
        if args.get(name) is not None:
            extras[name] = args[name]
    if args.get("kind") is not None:
        extras["kind"] = ToolKind(args["kind"])
    if args.get("status") is not None:
        extras["status"] = ToolCallStatus(args["status"])
    if args.get("locations") is not None:
        extras["locations"] = [ToolCallLocation.from_json(loc) for loc in args["locations"]]
    return extras


@record
class ToolCallStarted(_ToolCallKind):
    """A tool call was announced (``tool_call``): its title (``name``), kind and raw input, and
    optionally the status it starts in (``pending`` when absent), its content (content blocks,
    :class:`~acp_facade.Diff`, :class:`~acp_facade.TerminalContent`), locations, raw output and
    programmatic name (``tool_name``: the tool as the model calls it, ``name`` on the wire)."""

    type = "tool_call_started"
    call_id: str = ""
    name: str = ""
    kind: ToolKind = ToolKind.OTHER
    input: Any = None
    status: Optional[ToolCallStatus] = None
    content: Optional[List[ToolCallContent]] = None
    locations: Optional[List[ToolCallLocation]] = None
    raw_output: Any = None
    tool_name: Optional[str] = None


@record
class ToolCallProgress(_ToolCallKind):
    """A tool call changed (``tool_call_update``): every field that is not ``None`` replaces the
    call's (``content`` and ``locations`` as whole lists; ``tool_name`` is its programmatic
    name)."""

    type = "tool_call_progress"
    call_id: str = ""
    status: Optional[ToolCallStatus] = None
    content: Optional[List[ToolCallContent]] = None
    title: Optional[str] = None
    kind: Optional[ToolKind] = None
    locations: Optional[List[ToolCallLocation]] = None
    raw_input: Any = None
    raw_output: Any = None
    tool_name: Optional[str] = None


@record
class ToolCallCompleted(_ToolCallKind):
    """A tool call finished (``tool_call_update``, ``completed`` or ``failed``), with its final
    ``output`` (empty: unchanged) and any other fields that changed as it did."""

    type = "tool_call_completed"
    call_id: str = ""
    output: List[ToolCallContent] = field(default_factory=list)
    is_error: bool = False
    title: Optional[str] = None
    kind: Optional[ToolKind] = None
    locations: Optional[List[ToolCallLocation]] = None
    raw_input: Any = None
    raw_output: Any = None
    tool_name: Optional[str] = None


@record
class StepDone(_Kind):
    """A step finished: its AI message followed by its tool results (Enduring)."""

    type = "step_done"
    messages: List[Message] = field(default_factory=list)


@record
class ContextMeasured(_Kind):
    """The context window was measured; ``cost`` is the session's cumulative cost, when known
    (``usage_update.cost``)."""

    type = "context_measured"
    used: int = 0
    size: int = 0
    cost: Optional[Cost] = None

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        out: Dict[str, Any] = {"type": self.type, "used": self.used, "size": self.size}
        if self.cost is not None:
            out["cost"] = self.cost.to_json()
        return out


@record
class GateOpened(_Kind):
    """A gate opened; the turn waits for it."""

    type = "gate_opened"
    gate: Optional[Gate] = None


@record
class GateResolved(_Kind):
    """A gate was answered."""

    type = "gate_resolved"
    gate_id: str = ""


@record
class TurnDone(_Kind):
    """The turn finished; ``stop`` defaults to ``end_turn``."""

    type = "turn_done"
    stop: Optional[StopReason] = None
    message: Optional[Message] = None

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        return {
            "type": self.type,
            "stop": _wire(self.stop),
            "message": None if self.message is None else _message_to_json(self.message),
        }


@record
class TurnFailed(_Kind):
    """The turn failed; ``error`` is shown to the user."""

    type = "turn_failed"
    error: str = ""


@record
class TurnInterrupted(_Kind):
    """The turn was interrupted."""

    type = "turn_interrupted"


@record
class CompactWaiterResolved(_Kind):
    """A compaction completed; the event's ``command_id`` names it."""

    type = "compact_waiter_resolved"


@record
class CompactWaiterRejected(_Kind):
    """A compaction was rejected; the event's ``command_id`` names it."""

    type = "compact_waiter_rejected"
    reason: str = ""


@record
class SessionMetaChanged(_Kind):
    """The session's catalog metadata changed."""

    type = "session_meta_changed"
    title: Optional[str] = None
    updated_at: Optional[str] = None


@record
class PlanUpdated(_Kind):
    """The turn's plan, whole: it replaces any plan sent before (``plan``). Publish it Enduring so
    that ``session/load`` can show the session's latest plan."""

    type = "plan_updated"
    plan: Plan = field(default_factory=Plan)


@record
class ResponseMeta(_Kind):
    """``_meta`` for the turn's ``session/prompt`` response, whatever the turn's outcome; the last
    one before the turn's terminal event counts. Never sent as an update."""

    type = "response_meta"
    meta: Meta = field(default_factory=dict)


# The updates ACP gates behind a client capability (issue 34). Each carries the ACP value in its
# wire form; the core sends it only to a client that advertised the capability, and degrades it
# for any other (see each kind). Publish them Enduring, but notices and compaction reports.


@record
class PlanChanged(_Kind):
    """A plan with an id was created or replaced (``plan_update``): ``update`` is an ACP
    ``PlanUpdate`` in its wire form (``{"plan": {"type": "items", "planId", "entries"}}``, or
    ``"type": "markdown"`` with ``content``). A client that did not advertise plan operations gets
    the entries as a whole ``plan`` (a Markdown plan: an empty one). Enduring: ``session/load``
    replays each plan's latest form."""

    type = "plan_changed"
    update: Dict[str, Any] = field(default_factory=dict)


@record
class PlanRemoved(_Kind):
    """A plan with an id was removed (``plan_removed``; without plan operations: an empty
    ``plan``): ``removed`` is an ACP ``PlanRemoved`` (``{"planId": ...}``)."""

    type = "plan_removed"
    removed: Dict[str, Any] = field(default_factory=dict)


@record
class Notice(_Kind):
    """Information for the user that is not session history (``notice``), sent only to a client
    that advertised ``session.notices``: ``notice`` is an ACP ``Notice`` (``{"severity", "title",
    "description"}``). Ephemeral by nature: never replayed."""

    type = "notice"
    notice: Dict[str, Any] = field(default_factory=dict)


@record
class CompactionChanged(_Kind):
    """A compaction started, progressed or ended (``compaction_update``), sent only to a client
    that advertised ``session.compaction``: ``update`` is an ACP ``CompactionUpdate``
    (``{"compactionId", "status"}``)."""

    type = "compaction_changed"
    update: Dict[str, Any] = field(default_factory=dict)


@record
class CompactionSummary(_Kind):
    """A block of a compaction's summary (``compaction_summary_chunk``), sent only to a client
    that advertised ``session.compaction``: ``chunk`` is an ACP ``CompactionSummaryChunk``
    (``{"compactionId", "content"}``)."""

    type = "compaction_summary"
    chunk: Dict[str, Any] = field(default_factory=dict)


@record
class SubagentChanged(_Kind):
    """A child session was announced or changed (``subagent_update``), sent only to a client that
    advertised ``subagents``: ``update`` is an ACP ``SubagentUpdate`` (``{"sessionId", "title",
    "state"}``). Enduring: replayed by ``session/load``."""

    type = "subagent_changed"
    update: Dict[str, Any] = field(default_factory=dict)


@record
class SessionMessage(_Kind):
    """A message between this session and another one (``session_message``), sent only to a
    client that advertised ``subagents``: ``message`` is an ACP ``SessionMessage``
    (``{"messageId", "senderSessionId", "recipientSessionId", "content"}``). Enduring."""

    type = "session_message"
    message: Dict[str, Any] = field(default_factory=dict)


@record
class SessionMessageChunk(_Kind):
    """A block of a message between sessions (``session_message_chunk``), sent only to a client
    that advertised ``subagents``: ``chunk`` is an ACP ``SessionMessageChunk`` (``{"messageId",
    "content"}``). Enduring."""

    type = "session_message_chunk"
    chunk: Dict[str, Any] = field(default_factory=dict)


if TYPE_CHECKING:
    EventKind = Union[
        TurnStarted,
        TokenDelta,
        ToolCallStarted,
        ToolCallProgress,
        ToolCallCompleted,
        StepDone,
        ContextMeasured,
        GateOpened,
        GateResolved,
        TurnDone,
        TurnFailed,
        TurnInterrupted,
        CompactWaiterResolved,
        CompactWaiterRejected,
        SessionMetaChanged,
        PlanUpdated,
        ResponseMeta,
        PlanChanged,
        PlanRemoved,
        Notice,
        CompactionChanged,
        CompactionSummary,
        SubagentChanged,
        SessionMessage,
        SessionMessageChunk,
    ]
    """What happened."""

_KINDS: Dict[str, Any] = {
    k.type: k
    for k in (
        TurnStarted,
        TokenDelta,
        ToolCallStarted,
        ToolCallProgress,
        ToolCallCompleted,
        StepDone,
        ContextMeasured,
        GateOpened,
        GateResolved,
        TurnDone,
        TurnFailed,
        TurnInterrupted,
        CompactWaiterResolved,
        CompactWaiterRejected,
        SessionMetaChanged,
        PlanUpdated,
        ResponseMeta,
        PlanChanged,
        PlanRemoved,
        Notice,
        CompactionChanged,
        CompactionSummary,
        SubagentChanged,
        SessionMessage,
        SessionMessageChunk,
    )
}

_event_ids = itertools.count(1)


def _kind_from_json(data: Dict[str, Any]) -> EventKind:
    cls = _KINDS[data["type"]]
    args = {k: v for k, v in data.items() if k != "type"}
    if cls is TurnStarted:
        return TurnStarted(UserMessage.from_json(args.get("message", {})))
    if cls is StepDone:
        return StepDone([_message_from_json(m) for m in args.get("messages", [])])
    if cls is GateOpened:
        return GateOpened(Gate.from_json(args["gate"]))
    if cls is TurnDone:
        message = args.get("message")
        stop = args.get("stop")
        return TurnDone(
            stop=None if stop is None else StopReason(stop),
            message=None if message is None else _message_from_json(message),
        )
    if cls is TokenDelta:
        return TokenDelta(args.get("text", ""), TokenChannel(args.get("channel", "message")))
    if cls is ToolCallStarted:
        extras = _tool_extras(args)
        extras["kind"] = extras.get("kind", ToolKind.OTHER)
        return ToolCallStarted(args["call_id"], args.get("name", ""), input=args.get("input"), **extras)
    if cls is ToolCallCompleted:
        extras = _tool_extras({k: v for k, v in args.items() if k != "content"})
        return ToolCallCompleted(args["call_id"], list(args.get("output", [])), bool(args.get("is_error", False)), **extras)
    if cls is ContextMeasured:
        cost = args.get("cost")
        return ContextMeasured(args.get("used", 0), args.get("size", 0), None if cost is None else Cost.from_json(cost))
    if cls is PlanUpdated:
        return PlanUpdated(Plan.from_json(args.get("plan", {})))
    if cls is ToolCallProgress:
        return ToolCallProgress(args["call_id"], **_tool_extras(args))
    result: EventKind = cls(**args)
    return result


@record
class Event:
    """One event of a session's stream: its payload ``kind`` plus the header fields.

    ``command_id`` is the causing command (set on ``TurnStarted`` and on compaction results);
    ``loop_id`` and ``turn_id`` place the event in its turn. ``seq`` is assigned by the hub.
    """

    kind: EventKind
    event_class: EventClass = EventClass.EPHEMERAL
    visibility: Visibility = Visibility.PUBLIC
    command_id: Optional[str] = None
    loop_id: Optional[str] = None
    turn_id: Optional[str] = None
    id: str = field(default_factory=lambda: f"py-event-{next(_event_ids)}")
    seq: int = 0

    def is_public(self) -> bool:
        """Whether the event may reach a client."""
        return self.visibility is Visibility.PUBLIC

    def to_json(self) -> Dict[str, Any]:
        """The core's JSON form."""
        return {
            "header": {
                "id": self.id,
                "seq": self.seq,
                "class": _wire(self.event_class),
                "visibility": _wire(self.visibility),
                "cause": {"command_id": self.command_id},
                "coordinates": {"loop_id": self.loop_id, "turn_id": self.turn_id},
            },
            "kind": self.kind.to_json(),
        }

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Event":
        """Builds one from the core's JSON form."""
        header = data["header"]
        cause = header.get("cause") or {}
        coordinates = header.get("coordinates") or {}
        return cls(
            kind=_kind_from_json(data["kind"]),
            event_class=EventClass(header["class"]),
            visibility=Visibility(header["visibility"]),
            command_id=cause.get("command_id"),
            loop_id=coordinates.get("loop_id"),
            turn_id=coordinates.get("turn_id"),
            id=header["id"],
            seq=header.get("seq", 0),
        )


if not TYPE_CHECKING:

    def _make_aliases() -> Dict[str, Any]:
        from typing import Any, Dict, Union

        return {
            "ContentBlock": Dict[str, Any],
            "Message": Union[UserMessage, AiMessage, ToolResultMessage],
            "EventKind": Union[tuple(_KINDS.values())],  # the kinds in the order above
        }

    __getattr__ = _hints.aliases(__name__, ("ContentBlock", "Message", "EventKind"), _make_aliases)
