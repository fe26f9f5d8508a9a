"""The batteries-included runner: a complete ACP agent from one ``async def run_turn(turn)``.

:class:`Runner` implements every host part over a store (:class:`SqliteStore`,
:class:`PostgresStore` or :class:`MemoryStore`) and runs each prompt as a :class:`Turn` of the product's
:class:`TurnRunner`. Replay, list, delete, resume, titles and config options then work with no
further product code.

A turn runner defines ``async def run_turn(self, turn)`` and may define
``config_options(self) -> list[ConfigOption]`` and ``commands(self) -> list[AvailableCommand]``
(host-defined slash commands every session starts with), ``accepts_system_prompt(self) -> bool``
(whether its turns take the client's system prompt, :attr:`Turn.system_prompt`; these three are read
once, when the runner is built), ``title(self, first_prompt) -> str | None`` and
``async def compact(self, session_id) -> str | None`` (its presence switches ``/compact`` on; it
returns the compaction's summary, if any).
"""

from __future__ import annotations

from enum import Enum

from ._coro import iscoroutinefunction
from ._record import record
from . import _native
from ._bridge import DONE, dispatcher
from .client import Client, ClientCapabilities
from .acp import (
    AvailableCommand,
    Cost,
    NoticeSeverity,
    Plan,
    PlanEntry,
    SystemPrompt,
    ToolCallLocation,
    mcp_server_from_json,
    prompt_block_from_json,
    tool_content_json,
)
from .harness import ApprovalAction, StopReason, ToolCallStatus, ToolKind, plain_text
from .history import (
    AssistantEntry,
    HistoryEntry,
    SummaryEntry,
    ThoughtEntry,
    ToolCallEntry,
    UserEntry,
    history_from_json,
)
from .host import ConfigOption, commands_json
from .prompt import SlashCommand

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Awaitable, Dict, List, Optional, Sequence, Union
    from .client import ElicitationSchema
    from .acp import McpServer, Meta, PromptBlock, ToolCallContent
    from .harness import ContentBlock
    from .agent import Agent, Options

__all__ = [
    "AssistantEntry",
    "HistoryEntry",
    "MemoryStore",
    "Permission",
    "PermissionAnswer",
    "PostgresStore",
    "Reply",
    "Runner",
    "SqliteStore",
    "Subagent",
    "SummaryEntry",
    "ThoughtEntry",
    "ToolCallEntry",
    "Turn",
    "TurnRunner",
    "UserEntry",
]

SqliteStore = _native.SqliteStore
PostgresStore = _native.PostgresStore
MemoryStore = _native.MemoryStore


class Permission(str, Enum):
    """How a permission request was answered."""

    ALLOWED = "allowed"
    ALLOWED_ALWAYS = "allowed_always"
    DENIED = "denied"
    CANCELLED = "cancelled"

    def is_allowed(self) -> bool:
        """Whether the tool may run."""
        return self in (Permission.ALLOWED, Permission.ALLOWED_ALWAYS)


_ALL_CONTROLS = (ApprovalAction.APPROVE, ApprovalAction.APPROVE_ALWAYS, ApprovalAction.DENY)


@record(frozen=True)
class Reply:
    """How the user answered a question of the turn (:meth:`Turn.ask`, :meth:`Turn.fill_form`,
    :meth:`Turn.open_url`).

    ``kind`` is ``"answered"`` (``value`` holds the answer: an ask-user question's text, a form's
    values by field name, an open-URL step's consent), ``"declined"`` (the user said no),
    ``"dismissed"`` (the user closed the question without choosing) or ``"cancelled"`` (the turn
    was cancelled while it waited).
    """

    kind: str
    value: Any = None

    @property
    def answered(self) -> bool:
        """Whether there is an answer."""
        return self.kind == "answered"


@record(frozen=True)
class PermissionAnswer:
    """The answer to :meth:`Turn.request_permission_with_options`.

    ``kind`` is ``"action"`` (one of the offered controls, ``action``; a denial too when the
    client's answer was not usable), ``"selected"`` (the host-defined option ``option_id``) or
    ``"cancelled"`` (the turn was cancelled while it waited).
    """

    kind: str
    action: Optional[ApprovalAction] = None
    option_id: Optional[str] = None

    @classmethod
    def _from_native(cls, answer: Any) -> "PermissionAnswer":
        kind, value = answer
        if kind == "action":
            return cls(kind, action=ApprovalAction(value))
        if kind == "selected":
            return cls(kind, option_id=str(value))
        return cls(kind)




def _value(v: Any) -> Any:
    return v.value if isinstance(v, Enum) else v


def _tool_fields(
    title: Optional[str],
    name: Optional[str],
    kind: Any,
    status: Any,
    content: Optional[Sequence[ToolCallContent]],
    locations: Optional[Sequence[Union[ToolCallLocation, Dict[str, Any]]]],
    raw_input: Any,
    raw_output: Any,
) -> Dict[str, Any]:
    """A tool call's fields in ACP's wire form, only those given."""
    fields: Dict[str, Any] = {}
    if title is not None:
        fields["title"] = title
    if name is not None:
        fields["name"] = name
    if kind is not None:
        fields["kind"] = _value(kind)
    if status is not None:
        fields["status"] = _value(status)
    if content is not None:
        fields["content"] = [tool_content_json(c) for c in content]
    if locations is not None:
        fields["locations"] = [loc if isinstance(loc, dict) else loc.to_json() for loc in locations]
    if raw_input is not None:
        fields["rawInput"] = raw_input
    if raw_output is not None:
        fields["rawOutput"] = raw_output
    return fields


class Turn:
    """One running turn, handed to ``run_turn``.

    Streaming calls (:meth:`text`, :meth:`thought`) are cheap synchronous calls into a Rust queue
    that return an awaitable: already complete, unless the client is slow to read and the queue
    is long (then awaiting it waits: back-pressure). The other calls that answer nothing
    (:meth:`tool_progress`, :meth:`complete_tool_call`, :meth:`fail_tool_call`,
    :meth:`update_tool`, :meth:`usage`, :meth:`end_step`, :meth:`plan`,
    :meth:`set_response_meta`, :meth:`Subagent.finish`) or what the client advertised
    (:meth:`notice`, :meth:`update_plan`, :meth:`update_plan_markdown`, :meth:`remove_plan`) are
    queued the same way: awaiting them waits only for back-pressure, and the turn applies
    everything in call order. Always ``await`` them: a caller that ignores
    them is refused with :class:`RuntimeError` once the queue holds its hard bound of operations
    (nothing is queued then; memory stays bounded). When the turn is cancelled
    (``session/cancel``, close) the ``run_turn`` task is cancelled too; a loop that never awaits
    should check :meth:`is_cancelled`.

    Each call has one primary form; the others are shorthands of it, documented as such:

    - tool calls: :meth:`start_tool` announces one, :meth:`update_tool` changes it;
      :meth:`start_tool_call`, :meth:`tool_progress`, :meth:`complete_tool_call` and
      :meth:`fail_tool_call` are shorthands of those two;
    - permission: :meth:`request_permission_with_options`; :meth:`request_permission` is its
      shorthand without host-defined options;
    - questions: :meth:`ask`; :meth:`ask_user` is its shorthand for the answer alone.
    """

    __slots__ = ("_n",)

    def __init__(self, native: Any) -> None:
        self._n = native

    @property
    def session_id(self) -> str:
        """The session this turn runs in."""
        return str(self._n.session_id)

    @property
    def cwd(self) -> str:
        """The session's working directory."""
        return str(self._n.cwd)

    def prompt(self) -> List[PromptBlock]:
        """The prompt's content blocks, typed, as the client sent them: text and resource links
        always; images, audio and embedded resources when the agent advertises them
        (``Options.prompt_capabilities``, checked before the turn starts)."""
        return [prompt_block_from_json(b) for b in self._n.prompt()]

    @property
    def command(self) -> Optional[SlashCommand]:
        """The host-defined slash command this prompt invokes (``/name input``, see
        ``TurnRunner.commands``), if any."""
        command = self._n.command
        return None if command is None else SlashCommand.from_json(command)

    @property
    def meta(self) -> Optional[Meta]:
        """The ``session/prompt`` request's ``_meta`` (e.g. a W3C ``traceparent``), as the client
        sent it."""
        meta: Optional[Meta] = self._n.meta
        return meta

    @property
    def mcp_servers(self) -> List[McpServer]:
        """The MCP servers the session was given (by the ``session/new``, ``load`` or ``resume``
        that opened it), in order."""
        return [mcp_server_from_json(s) for s in self._n.mcp_servers]

    def prompt_text(self) -> str:
        """The prompt's text blocks, concatenated."""
        return str(self._n.prompt_text())

    def config_value(self, config_id: str) -> Optional[str]:
        """The value of one of the session's select config options when the turn started."""
        value: Optional[str] = self._n.config_value(config_id)
        return value

    def is_cancelled(self) -> bool:
        """Whether the turn was cancelled."""
        return bool(self._n.is_cancelled())

    def cancelled(self) -> Awaitable[None]:
        """Resolves when the turn is cancelled."""
        return dispatcher.wait(self._n.cancelled)

    def step_text(self) -> str:
        """The reply text streamed in the current step so far."""
        return str(self._n.step_text())

    def _paced(self, wait: bool) -> Awaitable[None]:
        """What a queued operation that answers nothing hands its caller: already complete, or
        (``wait``: the queue is long) an awaitable that completes once it is short again."""
        if wait:
            return dispatcher.wait(self._n.drained)
        return DONE

    def text(self, text: str) -> Awaitable[None]:
        """Streams reply text (``agent_message_chunk``)."""
        if self._n.text(text):
            return dispatcher.wait(self._n.drained)
        return DONE

    def thought(self, text: str) -> Awaitable[None]:
        """Streams reasoning (``agent_thought_chunk``)."""
        if self._n.thought(text):
            return dispatcher.wait(self._n.drained)
        return DONE

    async def start_tool_call(self, title: str, kind: ToolKind = ToolKind.OTHER, input: Any = None) -> str:
        """Announces a tool call (``tool_call``, status pending); returns its id. A shorthand of
        ``start_tool(title, kind=kind, raw_input=input)``."""
        result: str = await dispatcher.wait(self._n.start_tool_call, title, _value(kind), input)
        return result

    async def tool_progress(
        self, call_id: str, status: Optional[ToolCallStatus] = None, content: Optional[List[ContentBlock]] = None
    ) -> None:
        """Reports progress of a tool call (``tool_call_update``): a new status and/or new
        content (replacing earlier content). A shorthand of
        ``update_tool(call_id, status=status, content=content)``."""
        await self._paced(self._n.tool_progress(call_id, _value(status), content))

    async def complete_tool_call(self, call_id: str, output: Sequence[ContentBlock] = ()) -> None:
        """Finishes a tool call successfully (``tool_call_update``, status completed), with
        ``output`` as its content when not empty. A shorthand of
        ``update_tool(call_id, status=ToolCallStatus.COMPLETED, content=output)``."""
        await self._paced(self._n.complete_tool_call(call_id, list(output)))

    async def fail_tool_call(self, call_id: str, output: Sequence[ContentBlock] = ()) -> None:
        """Finishes a tool call as failed (``tool_call_update``, status failed), with ``output``
        as its content when not empty. A shorthand of
        ``update_tool(call_id, status=ToolCallStatus.FAILED, content=output)``."""
        await self._paced(self._n.fail_tool_call(call_id, list(output)))

    async def start_tool(
        self,
        title: str,
        *,
        name: Optional[str] = None,
        kind: Union[ToolKind, str, None] = None,
        status: Union[ToolCallStatus, str, None] = None,
        content: Optional[Sequence[ToolCallContent]] = None,
        locations: Optional[Sequence[Union[ToolCallLocation, Dict[str, Any]]]] = None,
        raw_input: Any = None,
        raw_output: Any = None,
    ) -> str:
        """Announces a tool call (``tool_call``) with any of its fields: ``name`` (its programmatic
        name, the tool as the model calls it, shown beside the title), ``kind`` (``other`` when
        absent), ``status`` (``pending``), ``content`` (content blocks, :class:`Diff`,
        :class:`TerminalContent` or a :class:`Terminal`'s ``content``), ``locations``, ``raw_input``, ``raw_output``; returns its id. A call
        finished with :meth:`update_tool` is replayed by ``session/load`` as it ended, less its
        terminals (only the live turn's client has them). The primary form of announcing a
        tool call (:meth:`start_tool_call` is a shorthand)."""
        fields = _tool_fields(title, name, kind, status, content, locations, raw_input, raw_output)
        result: str = await dispatcher.wait(self._n.start_tool, fields)
        return result

    async def update_tool(
        self,
        call_id: str,
        *,
        title: Optional[str] = None,
        name: Optional[str] = None,
        kind: Union[ToolKind, str, None] = None,
        status: Union[ToolCallStatus, str, None] = None,
        content: Optional[Sequence[ToolCallContent]] = None,
        locations: Optional[Sequence[Union[ToolCallLocation, Dict[str, Any]]]] = None,
        raw_input: Any = None,
        raw_output: Any = None,
    ) -> None:
        """Changes any subset of a tool call's fields (``tool_call_update``): each one given
        replaces the call's (``content`` and ``locations`` as whole lists); a ``status`` of
        ``completed`` or ``failed`` finishes the call. The primary form of changing a tool call
        (:meth:`tool_progress`, :meth:`complete_tool_call`, :meth:`fail_tool_call` are
        shorthands)."""
        fields = _tool_fields(title, name, kind, status, content, locations, raw_input, raw_output)
        await self._paced(self._n.update_tool(call_id, fields))

    async def request_permission(
        self, call_id: str, title: str, controls: Sequence[ApprovalAction] = _ALL_CONTROLS
    ) -> Permission:
        """Asks the client for permission to run ``call_id`` (``session/request_permission``),
        offering ``controls``. A shorthand of :meth:`request_permission_with_options` without
        host-defined options, its answer as a :class:`Permission`."""
        answer = await dispatcher.wait(self._n.request_permission, call_id, title, [_value(c) for c in controls])
        return Permission(answer)

    async def ask_user(self, question: str) -> Any:
        """Asks the user a question: the answer's text, or ``None`` when the user declined or
        dismissed it, or the turn was cancelled. A shorthand of :meth:`ask` that keeps only
        ``reply.value`` when ``reply.answered`` (``None`` otherwise): :meth:`ask` tells those
        apart."""
        return await dispatcher.wait(self._n.ask_user, question)

    async def ask(self, question: str) -> Reply:
        """Asks the user a question: a form elicitation with one required string field
        (``answer``) when the client advertised ``elicitation.form``; otherwise it waits until the
        turn is cancelled. The primary form of a question (:meth:`ask_user` is a shorthand)."""
        kind, value = await dispatcher.wait(self._n.ask, question)
        return Reply(kind, value)

    async def fill_form(self, message: str, schema: ElicitationSchema) -> Reply:
        """Asks the user to fill in a form (never for secrets): a form elicitation with
        ``schema`` when the client advertised ``elicitation.form``; the answer holds the values by
        field name."""
        kind, value = await dispatcher.wait(self._n.fill_form, message, schema)
        return Reply(kind, value)

    async def open_url(self, message: str, url: str) -> Reply:
        """Asks the user to open ``url``: a URL elicitation when the client advertised
        ``elicitation.url``; once the user accepted, the agent tells the client the step is done
        (``elicitation/complete``). For a step that finishes later, use
        :meth:`Client.elicit_url` and :meth:`Client.complete_elicitation` on :attr:`client`."""
        kind, value = await dispatcher.wait(self._n.open_url, message, url)
        return Reply(kind, value)

    async def request_permission_with_options(
        self,
        call_id: str,
        title: str,
        controls: Sequence[ApprovalAction] = _ALL_CONTROLS,
        options: Sequence[Dict[str, Any]] = (),
    ) -> PermissionAnswer:
        """Asks for permission to run ``call_id`` offering ``controls`` and then the host-defined
        ``options`` (ACP permission options, e.g. ``{"optionId": "reject_always", "name": "Never",
        "kind": "reject_always"}``); the answer is checked against what was offered. The primary
        form of a permission request (:meth:`request_permission` is a shorthand)."""
        answer = await dispatcher.wait(
            self._n.request_permission_with_options, call_id, title, [_value(c) for c in controls], list(options)
        )
        return PermissionAnswer._from_native(answer)

    @property
    def client(self) -> Client:
        """The turn's handle on the client: read and write files through the editor, run
        commands in its terminals, ask the user. Its calls go out after the updates of what the
        turn did before them, are cancelled with the turn, and its terminals are released when the
        turn ends (killed first when it was cancelled)."""
        return Client(self._n.client())

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client advertised (``fs``, ``terminal``, ``elicitation``, ``auth.terminal``,
        ``session.notices``, ``session.compaction``, ``subagents``, ``plan``, ``_meta``)."""
        return ClientCapabilities(**self._n.client_capabilities())

    @property
    def system_prompt(self) -> Optional[SystemPrompt]:
        """The client's system prompt for the session: the ``systemPrompt`` of its
        ``session/new``, or of the latest ``session/load`` or ``session/resume`` that carried one
        (a load or resume without one keeps the session's). Always ``None`` unless the turn runner
        :meth:`~TurnRunner.accepts_system_prompt`. :meth:`compose_system_prompt` applies it."""
        data = self._n.system_prompt
        return None if data is None else SystemPrompt.from_json(data)

    def compose_system_prompt(self, own: str) -> str:
        """The system prompt for the model: ``own`` (the agent's) with the client's
        :attr:`system_prompt` applied. ``append``: ``own``, a newline, then the client's text;
        ``override``: the client's text alone; no system prompt: ``own``. The client's text is its
        text blocks, joined (:attr:`SystemPrompt.text`)."""
        return str(self._n.compose_system_prompt(own))

    async def usage(self, used: int, size: int, cost: Optional[Cost] = None) -> None:
        """Reports context usage, with the session's cumulative ``cost`` when known; closes the
        current step first (``usage_update``)."""
        if cost is None:
            await self._paced(self._n.usage(used, size))
        else:
            await self._paced(self._n.usage_with_cost(used, size, cost))

    async def plan(self, plan: Plan) -> None:
        """Sends the turn's plan (``plan``): every entry with its current status. Each plan
        replaces the one before at the client; send it again, whole, as entries progress.
        ``session/load`` replays the session's latest plan."""
        await self._paced(self._n.plan(plan))

    async def update_plan(self, plan_id: str, entries: Sequence[Union[PlanEntry, Dict[str, Any]]]) -> bool:
        """Creates or replaces the plan ``plan_id`` with ``entries``, each with its current status
        (``plan_update``); send it again, whole, as entries progress. A client that did not
        advertise plan operations (``plan``, :attr:`ClientCapabilities.plan_operations`) gets the
        entries as a whole ``plan`` update instead, so one call serves every client. Returns
        whether the client received the plan with its id. ``session/load`` replays each plan's
        latest form."""
        received, wait = self._n.update_plan(plan_id, list(entries))
        await self._paced(wait)
        return bool(received)

    async def update_plan_markdown(self, plan_id: str, content: str) -> bool:
        """Creates or replaces the plan ``plan_id`` with a Markdown document (``plan_update``). A
        client without plan operations gets an empty whole ``plan`` (a document has no entries).
        Returns whether the client received the plan with its id."""
        received, wait = self._n.update_plan_markdown(plan_id, content)
        await self._paced(wait)
        return bool(received)

    async def remove_plan(self, plan_id: str) -> bool:
        """Removes the plan ``plan_id`` (``plan_removed``; for a client without plan operations,
        an empty ``plan``). Returns whether the client received the removal as such."""
        received, wait = self._n.remove_plan(plan_id)
        await self._paced(wait)
        return bool(received)

    async def notice(
        self,
        title: str,
        severity: Union[NoticeSeverity, str] = NoticeSeverity.INFO,
        description: Optional[str] = None,
    ) -> bool:
        """Shows the user a notice (``notice``): information that is not part of the conversation
        (never replayed by ``session/load``), titled ``title`` (plain text that stands alone, not
        empty), of ``severity`` (``"info"``, ``"warning"`` or ``"error"``; another value is a
        ``ValueError`` naming it), with an optional plain-text ``description``. Sent only to a
        client that advertised ``session.notices``; returns whether it was (``False``: nothing was
        sent, so say it another way if it matters)."""
        try:
            level = NoticeSeverity(severity)
        except ValueError:
            raise ValueError(f"unknown notice severity {severity!r} (info, warning or error)") from None
        notice: Dict[str, Any] = {"severity": level.value, "title": title}
        if description is not None:
            notice["description"] = description
        received, wait = self._n.notice(notice)
        await self._paced(wait)
        return bool(received)

    async def start_subagent(self, title: str) -> Subagent:
        """Starts a subagent: a child session of this one, announced to the client with
        ``subagent_update`` (titled ``title``). Exchange messages with it through the returned
        :class:`Subagent`, then :meth:`~Subagent.finish` it. Sent only to a client that advertised
        ``subagents`` (:attr:`Subagent.is_visible`); the exchange is journaled either way, and
        replayed to such a client by ``session/load``."""
        session_id: str = await dispatcher.wait(self._n.start_subagent, title)
        return Subagent(self._n, session_id, bool(self._n.subagents_visible()))

    async def set_response_meta(self, meta: Meta) -> None:
        """Sets the ``_meta`` of the prompt's response, whatever the turn's outcome (the last
        call counts)."""
        await self._paced(self._n.set_response_meta(meta))

    async def history(self, limit: int = 50) -> List[HistoryEntry]:
        """The session's conversation before this turn: its last ``limit`` entries, oldest first —
        :class:`UserEntry`, :class:`AssistantEntry`, :class:`ThoughtEntry` and
        :class:`ToolCallEntry` (with the call's final status, title, kind, raw input and output
        and content) from every earlier turn of the session, also those run before it was loaded
        or resumed, in any process sharing the store; what the latest compaction replaced stands as
        one :class:`SummaryEntry` first. This turn's own prompt is not in it. Read from the
        entries the session keeps in memory (a ``limit`` reaching older ones reads the store).

        ``ValueError`` for a negative ``limit``::

            messages = []
            for entry in await turn.history(limit=50):
                if entry.type == "user":
                    messages.append({"role": "user", "content": entry.text})
                elif entry.type == "assistant":
                    messages.append({"role": "assistant", "content": entry.text})
                elif entry.type == "tool_call":
                    messages.append({"role": "tool", "content": f"{entry.title}: {entry.text}"})
                elif entry.type == "summary":
                    messages.append({"role": "system", "content": f"Earlier: {entry.text}"})
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"history limit must be an int >= 0, not {limit!r}")
        data: List[Dict[str, Any]] = await dispatcher.wait(self._n.history, limit)
        return history_from_json(data)

    async def set_mode(self, mode_id: str) -> None:
        """Switches the session to mode ``mode_id`` (the config option ``mode``), as if the client
        had asked: the client gets ``current_mode_update`` then ``config_option_update``, before
        the prompt's response; the current mode changes nothing; an unknown one raises
        :class:`acp_facade.InvalidParams` and changes nothing."""
        await dispatcher.wait(self._n.set_mode, mode_id)

    async def set_config_option(self, config_id: str, value: str) -> List[Dict[str, Any]]:
        """Sets the select option ``config_id`` to ``value``, as if the client had asked (see
        :meth:`set_mode`); returns the complete state the client now has, as ACP config options."""
        options: List[Dict[str, Any]] = await dispatcher.wait(self._n.set_config_option, config_id, value)
        return options

    async def set_commands(self, commands: Sequence[Union[AvailableCommand, Dict[str, Any]]]) -> None:
        """Replaces the session's host-defined slash commands (advertised at once once the
        session's first prompt advertised them)."""
        await dispatcher.wait(self._n.set_commands, commands_json(commands))

    async def end_step(self) -> None:
        """Closes the current step, if it has content."""
        await self._paced(self._n.end_step())

    def __repr__(self) -> str:
        return f"Turn(session_id={self.session_id!r})"


class Subagent:
    """A child session started by :meth:`Turn.start_subagent`: the messages between it and the
    turn's session, as the client sees them in the parent session (``session_message``, streamed
    as ``session_message_chunk`` updates). Its calls are queued with the turn's, in call order."""

    __slots__ = ("_n", "_session_id", "_visible")

    def __init__(self, native: Any, session_id: str, visible: bool) -> None:
        self._n = native
        self._session_id = session_id
        self._visible = visible

    @property
    def session_id(self) -> str:
        """The child session's id."""
        return self._session_id

    @property
    def is_visible(self) -> bool:
        """Whether the client sees the subagent's updates (it advertised ``subagents``)."""
        return self._visible

    async def send(self, text: str) -> str:
        """A message from the turn's session to the child (``session_message`` with ``text``).
        Returns the message's id."""
        message_id: str = await dispatcher.wait(self._n.subagent_send, self._session_id, text)
        return message_id

    async def reply(self, chunks: Sequence[str]) -> str:
        """The child's reply to the turn's session: a ``session_message`` from the child, then each
        of ``chunks`` as a ``session_message_chunk`` of it, in order. Returns the message's id."""
        message_id: str = await dispatcher.wait(self._n.subagent_reply, self._session_id, list(chunks))
        return message_id

    async def finish(self, stop_reason: Union[StopReason, str] = StopReason.END_TURN) -> None:
        """Reports the child idle, its work ended with ``stop_reason`` (``subagent_update`` with
        state ``idle``)."""
        if self._n.subagent_finish(self._session_id, _value(stop_reason)):
            await dispatcher.wait(self._n.drained)

    def __repr__(self) -> str:
        return f"Subagent(session_id={self._session_id!r})"


class TurnRunner:
    """What a product writes: how one turn runs. Subclass it and define ``run_turn``.

    Optional: ``config_options()``, ``commands()``, :meth:`accepts_system_prompt`,
    ``title(first_prompt)`` and ``async def compact(session_id)``, which compacts the session's
    context (``/compact``) and returns the summary that replaces what was compacted, a ``str``, or
    ``None`` (a client that advertised ``session.compaction`` sees the compaction start, the
    summary and its end; any other client only the prompt's ``end_turn``; any other value fails
    the compaction).
    """

    async def run_turn(self, turn: Turn) -> Union[StopReason, str, None]:
        """Runs one turn and returns why it stopped (``None`` means ``end_turn``).

        Raise to fail the turn (``-32603`` with the exception's text).
        """
        raise NotImplementedError

    def accepts_system_prompt(self) -> bool:
        """Whether the turns take the client's system prompt (:attr:`Turn.system_prompt`):
        advertised as ``sessionCapabilities.systemPrompt``. Read once, when the :class:`Runner`
        is built. Default: no."""
        return False


class _TurnRunnerAdapter:
    """Turns the core's plain data into typed objects for the product's turn runner."""

    __slots__ = ("_r",)

    def __init__(self, runner: Any) -> None:
        self._r = runner

    async def run_turn(self, native: Any) -> Optional[str]:
        import asyncio  # loaded by now; not at the package's import (see acp_facade.agent)

        try:
            stop = await self._r.run_turn(Turn(native))
        except asyncio.CancelledError:
            return StopReason.CANCELLED.value
        return None if stop is None else str(_value(stop))

    def title(self, first_prompt: str) -> Any:
        return self._r.title(first_prompt)

    async def compact(self, session_id: str) -> Any:
        return await self._r.compact(session_id)


class Runner:
    """The runner: every host part over ``store`` running turns with ``turn_runner``."""

    __slots__ = ("_native", "turn_runner")

    def __init__(
        self, store: Union[_native.SqliteStore, _native.PostgresStore, _native.MemoryStore], turn_runner: Any
    ) -> None:
        run_turn = getattr(turn_runner, "run_turn", None)
        if run_turn is None:
            raise TypeError(f"{type(turn_runner).__name__} has no `run_turn` method")
        for name in ("run_turn", "compact"):
            method = getattr(turn_runner, name, None)
            if method is not None and not iscoroutinefunction(method):
                raise TypeError(f"{type(turn_runner).__name__}.{name} must be an `async def` method, not a plain function")
        options: List[Any] = []
        config_options = getattr(turn_runner, "config_options", None)
        if config_options is not None:
            options = [o.to_json() if isinstance(o, ConfigOption) else o for o in config_options()]
        commands = getattr(turn_runner, "commands", None)
        accepts_system_prompt = getattr(turn_runner, "accepts_system_prompt", None)
        if accepts_system_prompt is not None and not callable(accepts_system_prompt):
            raise TypeError(
                f"{type(turn_runner).__name__}.accepts_system_prompt must be a method returning a bool, "
                f"not a {type(accepts_system_prompt).__name__}"
            )
        self.turn_runner = turn_runner
        self._native = _native.Runner(
            store,
            _TurnRunnerAdapter(turn_runner),
            options,
            has_title=callable(getattr(turn_runner, "title", None)),
            compaction=callable(getattr(turn_runner, "compact", None)),
            system_prompt=bool(accepts_system_prompt()) if accepts_system_prompt is not None else False,
            commands=commands_json(commands()) if callable(commands) else [],
        )

    def options(self) -> "Options":
        """Options with every host part of the runner set (``/compact`` when supported, the
        client's system prompt when accepted)."""
        from .agent import Options

        return Options._wrap(self._native.options())

    def agent(self, options: "Optional[Options]" = None) -> "Agent":
        """An agent with ``options`` (default: :meth:`options`)."""
        from .agent import Agent

        return Agent(options if options is not None else self.options())

