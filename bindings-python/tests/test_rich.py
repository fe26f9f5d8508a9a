"""The rich turn from Python: the typed values and their wire forms; prompt blocks, MCP
servers, the request's ``_meta``, slash commands and the session's ``SessionControl`` reaching a
host's live session; plans, response ``_meta`` and costs from its events; extension methods; and
the runner's ``Turn`` with all of it. Every message the agent sends is checked against the schema."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Dict, List, Optional

import pytest
from acp import RequestError

import acp_facade
from acp_facade import (
    AcpError,
    Agent,
    AudioContent,
    AvailableCommand,
    BlobResourceContents,
    ConfigOption,
    ContextMeasured,
    Cost,
    Diff,
    EmbeddedResource,
    EnvVariable,
    Event,
    EventClass,
    GateResponse,
    HttpHeader,
    ImageContent,
    InvalidParams,
    LiveSession,
    McpCapabilities,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
    MemoryStore,
    Options,
    Plan,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    PlanUpdated,
    Prompt,
    PromptCapabilities,
    ResourceLink,
    ResourceNotFound,
    ResponseMeta,
    Runner,
    SelectOption,
    SessionMetaChanged,
    SessionControl,
    SessionHost,
    Setup,
    SlashCommand,
    TerminalContent,
    TextContent,
    TextResourceContents,
    TokenDelta,
    ToolCallCompleted,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStarted,
    ToolCallStatus,
    ToolKind,
    Turn,
    TurnDone,
    TurnRunner,
    TurnStarted,
    UserMessage,
)
from acp_facade.acp import mcp_server_from_json, prompt_block_from_json
from conftest import RecordingClient, connect, run, validate_def

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
STDIO = {"name": "fs", "command": "/usr/bin/mcp-fs", "args": ["--ro"], "env": [{"name": "LEVEL", "value": "2"}]}
HTTP = {"type": "http", "name": "web", "url": "https://example.com/mcp", "headers": [{"name": "A", "value": "b"}]}
SSE = {"type": "sse", "name": "old", "url": "https://example.com/sse", "headers": []}
SHOUT = AvailableCommand("shout", "Repeat the input in capitals", "text")


async def arrived(client: RecordingClient, count: int) -> List[str]:
    """The kinds of the client's updates once it has `count` of them (a control call returns once
    its updates are queued for the client, which reads them a little later)."""
    for _ in range(500):
        if len(client.updates) >= count:
            break
        await asyncio.sleep(0.01)
    return [u.session_update for _, u in client.updates]


def mode_option(current: str) -> ConfigOption:
    return ConfigOption("mode", "Mode", current, [SelectOption("ask", "Ask"), SelectOption("code", "Code")], category="mode")


# ---- the typed values -------------------------------------------------------------------------


def test_prompt_blocks_convert_to_and_from_their_wire_form() -> None:
    wire: List[Dict[str, Any]] = [
        {"type": "text", "text": "hi", "_meta": {"k": 1}},
        {"type": "image", "data": "AA==", "mimeType": "image/png", "uri": "file:///a.png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a.rs", "name": "a.rs", "title": "A", "mimeType": "text/x-rust", "size": 3},
        {"type": "resource", "resource": {"uri": "file:///n.md", "text": "héllo", "mimeType": "text/markdown"}},
        {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAEC"}},
    ]
    typed = [prompt_block_from_json(b) for b in wire]
    assert typed == [
        TextContent("hi", meta={"k": 1}),
        ImageContent("AA==", "image/png", "file:///a.png"),
        AudioContent("UklGRg==", "audio/wav"),
        ResourceLink("file:///a.rs", "a.rs", "A", mime_type="text/x-rust", size=3),
        EmbeddedResource(TextResourceContents("file:///n.md", "héllo", "text/markdown")),
        EmbeddedResource(BlobResourceContents("file:///b.bin", "AAEC")),
    ]
    assert [b.to_json() for b in typed] == wire
    for block in wire:
        validate_def("ContentBlock", block)
    with pytest.raises(ValueError, match="video"):
        prompt_block_from_json({"type": "video"})


def test_mcp_servers_plans_costs_and_commands_have_their_acp_form() -> None:
    servers = [mcp_server_from_json(s) for s in (STDIO, HTTP, SSE)]
    assert servers == [
        McpServerStdio("fs", "/usr/bin/mcp-fs", ["--ro"], [EnvVariable("LEVEL", "2")]),
        McpServerHttp("web", "https://example.com/mcp", [HttpHeader("A", "b")]),
        McpServerSse("old", "https://example.com/sse"),
    ]
    assert [s.transport for s in servers] == ["stdio", "http", "sse"]
    assert [s.to_json() for s in servers] == [STDIO, HTTP, SSE]
    for server in (STDIO, HTTP, SSE):
        validate_def("McpServer", server)
    with pytest.raises(ValueError, match="acp"):
        mcp_server_from_json({"type": "acp", "name": "x"})

    plan = Plan([PlanEntry("read", PlanEntryPriority.HIGH, PlanEntryStatus.COMPLETED), PlanEntry("write")], {"v": 2})
    assert plan.to_json() == {
        "entries": [
            {"content": "read", "priority": "high", "status": "completed"},
            {"content": "write", "priority": "medium", "status": "pending"},
        ],
        "_meta": {"v": 2},
    }
    assert Plan.from_json(plan.to_json()) == plan
    validate_def("Plan", plan.to_json())
    assert Cost(1.25, "EUR").to_json() == {"amount": 1.25, "currency": "EUR"}
    assert Cost.from_json({"amount": 3, "currency": "USD"}) == Cost(3.0, "USD")
    validate_def("Cost", Cost(1.25, "EUR").to_json())
    assert SHOUT.to_json() == {"name": "shout", "description": "Repeat the input in capitals", "input": {"hint": "text"}}
    assert AvailableCommand.from_json(SHOUT.to_json()) == SHOUT
    assert AvailableCommand("x", "y").to_json() == {"name": "x", "description": "y"}
    validate_def("AvailableCommand", SHOUT.to_json())
    assert PromptCapabilities(image=True, embedded_context=True).to_json() == {
        "image": True,
        "audio": False,
        "embeddedContext": True,
    }
    assert McpCapabilities(http=True).to_json() == {"http": True, "sse": False}
    prompt = Prompt.from_json(
        {"content": [{"type": "text", "text": "/shout hi"}], "command": {"name": "shout", "input": "hi"}, "meta": {"k": 1}}
    )
    assert prompt == Prompt([TextContent("/shout hi")], SlashCommand("shout", "hi"), {"k": 1})
    assert prompt.text() == "/shout hi"


def test_rich_events_round_trip_through_their_core_form() -> None:
    events = [
        Event(PlanUpdated(Plan([PlanEntry("a")])), EventClass.ENDURING, turn_id="t1"),
        Event(ResponseMeta({"traceparent": TRACEPARENT})),
        Event(ContextMeasured(10, 100, Cost(0.5, "USD")), EventClass.ENDURING),
        Event(ContextMeasured(10, 100)),
    ]
    for event in events:
        assert Event.from_json(event.to_json()) == event
    assert "cost" not in events[3].to_json()["kind"], "no cost: the core's form has none"


# ---- the host interfaces ----------------------------------------------------------------------


class RichSession(LiveSession):
    """Records what reaches it; each turn publishes a plan, a response `_meta` echoing the
    traceparent, a chunk naming the prompt's first block (or the command), and a usage with a
    cost."""

    def __init__(self, session_id: str, setup: Setup) -> None:
        super().__init__(session_id)
        self.setup = setup
        self.prompts: List[Prompt] = []
        self.control: Optional[SessionControl] = None
        self.controlled = asyncio.Event()
        self.mode = "ask"
        self._turns = itertools.count(1)

    def commands(self) -> List[AvailableCommand]:
        return [SHOUT]

    def set_control(self, control: SessionControl) -> None:
        self.control = control
        self.controlled.set()

    async def submit(self, prompt: List[Any]) -> str:
        raise AssertionError("submit_prompt is called instead")

    async def submit_prompt(self, prompt: Prompt) -> str:
        self.prompts.append(prompt)
        n = next(self._turns)
        command = f"{self.id}/c{n}"
        asyncio.get_running_loop().create_task(self._turn(command, f"t{n}", prompt))
        return command

    async def _turn(self, command: str, turn_id: str, prompt: Prompt) -> None:
        def event(kind: Any, durable: bool = False, command_id: Optional[str] = None) -> Event:
            event_class = EventClass.ENDURING if durable else EventClass.EPHEMERAL
            return Event(kind, event_class, command_id=command_id, loop_id="main", turn_id=turn_id)

        first = prompt.content[0]
        said = f"{prompt.command.name}: {prompt.command.input}" if prompt.command else type(first).__name__
        await self.events.publish(event(TurnStarted(UserMessage([b.to_json() for b in prompt.content])), True, command))
        await self.events.publish(event(PlanUpdated(Plan([PlanEntry("answer", status=PlanEntryStatus.IN_PROGRESS)])), True))
        if prompt.meta is not None and "traceparent" in prompt.meta:
            await self.events.publish(event(ResponseMeta({"traceparent": prompt.meta["traceparent"]})))
        await self.events.publish(event(TokenDelta(said)))
        await self.events.publish(event(ContextMeasured(5, 100, Cost(0.01, "USD")), True))
        await self.events.publish(event(TurnDone(), True))

    async def interrupt(self) -> None:
        return None

    async def respond_gate(self, gate_id: str, response: GateResponse) -> None:
        return None

    async def config_options(self) -> List[ConfigOption]:
        return [mode_option(self.mode)]

    async def set_config_option(self, config_id: str, value: Any) -> None:
        self.mode = str(value)


class RichHost(SessionHost):
    def __init__(self) -> None:
        self.sessions: List[RichSession] = []

    async def new_session(self, setup: Setup) -> LiveSession:
        session = RichSession(f"rich-{len(self.sessions) + 1}", setup)
        self.sessions.append(session)
        return session


async def echo(params: Any) -> Any:
    if params == {"fail": True}:
        raise InvalidParams("asked to fail", {"why": "test"})
    return {"echoed": params}


def rich_options(host: RichHost, notified: "asyncio.Queue[Any]") -> Options:
    async def notice(params: Any) -> None:
        notified.put_nowait(params)

    return Options(
        host,
        prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
        mcp_capabilities=McpCapabilities(http=True),
        extension_methods={"_test/echo": echo},
    ).extension_notifications({"_test/notice": notice})


def test_a_live_session_gets_typed_setups_prompts_and_commands_and_sends_plans_meta_and_costs() -> None:
    async def body() -> None:
        host = RichHost()
        client = RecordingClient()
        async with connect(Agent(rich_options(host, asyncio.Queue())), client) as conn:
            caps = conn.init_response.agent_capabilities.model_dump(by_alias=True, exclude_none=True)  # type: ignore[attr-defined]
            assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
            assert (caps["mcpCapabilities"]["http"], caps["mcpCapabilities"]["sse"]) == (True, False)
            assert caps["_meta"] == {"_test/echo": {}, "_test/notice": {}}
            send = conn._conn.send_request
            new = await send("session/new", {"cwd": "/tmp", "mcpServers": [STDIO, HTTP], "_meta": {"traceparent": TRACEPARENT}})
            sid = new["sessionId"]
            session = host.sessions[0]
            assert session.setup.mcp_servers == [mcp_server_from_json(STDIO), mcp_server_from_json(HTTP)]
            assert session.setup.meta == {"traceparent": TRACEPARENT}
            with pytest.raises(RequestError) as refused:
                await send("session/new", {"cwd": "/tmp", "mcpServers": [SSE]})
            assert refused.value.code == -32602 and len(host.sessions) == 1, "refused before the host saw it"

            image = {"type": "image", "data": "AA==", "mimeType": "image/png"}
            result = await send(
                "session/prompt",
                {"sessionId": sid, "prompt": [image, {"type": "text", "text": "look"}], "_meta": {"traceparent": TRACEPARENT}},
            )
            assert result == {"stopReason": "end_turn", "_meta": {"traceparent": TRACEPARENT}}
            assert session.prompts[0] == Prompt([ImageContent("AA==", "image/png"), TextContent("look")], None, {"traceparent": TRACEPARENT})
            ups = [u for s, u in client.updates if s == sid]
            assert [u.session_update for u in ups] == ["available_commands_update", "plan", "agent_message_chunk", "usage_update"]
            assert [c.name for c in ups[0].available_commands] == ["shout"], "the session's own commands"
            assert ups[1].entries[0].content == "answer" and ups[2].content.text == "ImageContent"
            assert (ups[3].cost.amount, ups[3].cost.currency) == (0.01, "USD")

            result = await send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": " /shout  hey you "}]})
            assert result == {"stopReason": "end_turn"}
            assert session.prompts[1].command == SlashCommand("shout", "hey you")
            assert client.chunks(session_id=sid)[-1] == "shout: hey you"

            with pytest.raises(RequestError) as refused:
                await send("session/prompt", {"sessionId": sid, "prompt": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]})
            assert refused.value.code == -32602 and len(session.prompts) == 2, "refused before the host saw it"

    run(body)


def test_a_live_session_changes_its_mode_options_and_commands_through_its_control() -> None:
    async def body() -> None:
        host = RichHost()
        client = RecordingClient()
        async with connect(Agent(rich_options(host, asyncio.Queue())), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            session = host.sessions[0]
            await asyncio.wait_for(session.controlled.wait(), 5)
            control = session.control
            assert control is not None and control.session_id == sid
            await control.set_mode("code")
            assert await arrived(client, 2) == ["current_mode_update", "config_option_update"]
            assert client.updates[0][1].current_mode_id == "code" and session.mode == "code"
            with pytest.raises(InvalidParams):
                await control.set_config_option("mode", "yolo")
            state = await control.set_config_option("mode", "ask")
            assert [o["currentValue"] for o in state] == ["ask"]
            assert (await arrived(client, 4))[2:] == ["current_mode_update", "config_option_update"]
            client.clear()
            await control.set_commands([SHOUT])  # not advertised before the first prompt
            await asyncio.sleep(0.1)
            assert client.updates == []
            await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi"}])  # type: ignore[list-item]
            client.clear()
            await control.set_commands([SHOUT, AvailableCommand("whisper", "Repeat it in lower case")])
            assert await arrived(client, 1) == ["available_commands_update"]
            assert [[c.name for c in u.available_commands] for _, u in client.updates] == [["shout", "whisper"]]
            await conn.close_session(session_id=sid)
            with pytest.raises(ResourceNotFound):
                await control.set_mode("code")

    run(body)


def test_extension_methods_and_notifications_reach_their_handlers() -> None:
    async def body() -> None:
        notified: "asyncio.Queue[Any]" = asyncio.Queue()
        async with connect(Agent(rich_options(RichHost(), notified))) as conn:
            send = conn._conn.send_request
            assert await send("_test/echo", {"a": [1, "é"]}) == {"echoed": {"a": [1, "é"]}}
            with pytest.raises(RequestError) as failed:
                await send("_test/echo", {"fail": True})
            assert (failed.value.code, failed.value.data) == (-32602, {"why": "test"})
            with pytest.raises(RequestError) as unknown:
                await send("_test/other", {})
            assert unknown.value.code == -32601
            await conn._conn.send_notification("_test/notice", {"n": 1})
            assert await asyncio.wait_for(notified.get(), 5) == {"n": 1}

    run(body)
    with pytest.raises(ValueError, match="begin with `_`"):
        Options(RichHost(), extension_methods={"test/echo": echo})

    def plain(params: Any) -> Any:
        return params

    with pytest.raises(TypeError, match="async def"):
        Options(RichHost()).extension_methods({"_test/plain": plain})  # type: ignore[dict-item]


def test_a_live_session_with_async_commands_is_refused() -> None:
    class Wrong(RichSession):
        async def commands(self) -> List[AvailableCommand]:  # type: ignore[override]
            return []

    class Host(SessionHost):
        async def new_session(self, setup: Setup) -> LiveSession:
            return Wrong("w", setup)

    async def body() -> None:
        async with connect(Agent(Options(Host()))) as conn:
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd="/tmp", mcp_servers=[])
            assert refused.value.code == -32603 and "commands" in str(refused.value)

    run(body)


# ---- the runner -------------------------------------------------------------------------------


class RichTurns(TurnRunner):
    """Each turn reports what it got and uses every rich call of the turn."""

    def __init__(self) -> None:
        self.seen: List[Any] = []
        self.refusals: List[int] = []

    def config_options(self) -> List[ConfigOption]:
        return [mode_option("ask")]

    def commands(self) -> List[AvailableCommand]:
        return [SHOUT]

    async def run_turn(self, turn: Turn) -> None:
        self.seen.append((turn.prompt(), turn.command, turn.meta, turn.mcp_servers))
        if turn.meta is not None:
            await turn.set_response_meta({"echo": turn.meta.get("traceparent")})
        await turn.plan(Plan([PlanEntry("think", status=PlanEntryStatus.IN_PROGRESS)]))
        if turn.command is not None:
            await turn.set_mode("code")
            try:
                await turn.set_mode("yolo")
            except AcpError as e:
                self.refusals.append(e.code)
            state = await turn.set_config_option("mode", "ask")
            assert [o["currentValue"] for o in state] == ["ask"]
            await turn.set_commands([SHOUT, {"name": "whisper", "description": "Quietly"}])
        await turn.text("ok")
        await turn.usage(10, 100, Cost(0.5, "USD"))


def test_a_runner_turn_gets_typed_prompts_commands_meta_and_servers_and_uses_every_rich_call() -> None:
    async def body() -> None:
        turns = RichTurns()
        runner = Runner(MemoryStore(), turns)
        options = runner.options().prompt_capabilities(PromptCapabilities(audio=True)).mcp_capabilities({"http": True})
        client = RecordingClient()
        async with connect(runner.agent(options), client) as conn:
            send = conn._conn.send_request
            sid = (await send("session/new", {"cwd": "/tmp", "mcpServers": [HTTP, STDIO]}))["sessionId"]
            audio = {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
            result = await send("session/prompt", {"sessionId": sid, "prompt": [audio], "_meta": {"traceparent": TRACEPARENT}})
            assert result == {"stopReason": "end_turn", "_meta": {"echo": TRACEPARENT}}
            assert turns.seen[0] == (
                [AudioContent("UklGRg==", "audio/wav")],
                None,
                {"traceparent": TRACEPARENT},
                [mcp_server_from_json(HTTP), mcp_server_from_json(STDIO)],
            )
            kinds = [u.session_update for _, u in client.updates]
            assert kinds == ["available_commands_update", "plan", "agent_message_chunk", "usage_update"], kinds
            usage = client.updates[-1][1]
            assert (usage.used, usage.size, usage.cost.amount, usage.cost.currency) == (10, 100, 0.5, "USD")

            client.clear()
            result = await send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "/shout it"}]})
            assert result == {"stopReason": "end_turn"}
            assert turns.seen[1][1] == SlashCommand("shout", "it")
            assert turns.refusals == [-32602]
            kinds = [u.session_update for _, u in client.updates]
            assert kinds == [
                "plan",
                "current_mode_update",
                "config_option_update",
                "current_mode_update",
                "config_option_update",
                "available_commands_update",
                "agent_message_chunk",
                "usage_update",
            ], kinds
            assert [c.name for c in client.updates[5][1].available_commands] == ["shout", "whisper"]

    run(body)


# ---- tool calls, complete ---------------------------------------------------------------------


class EditTurns(TurnRunner):
    """`edit`: a tool call with every field, changed twice; anything else tries invalid fields."""

    def __init__(self) -> None:
        self.errors: List[str] = []

    async def run_turn(self, turn: Turn) -> None:
        if turn.prompt_text() != "edit":
            attempts = [
                turn.update_tool("call", kind="edti"),
                turn.update_tool("call", locations=[{"line": 1}]),
                turn.start_tool("t", content=[{"type": "diff", "path": "/a"}]),
            ]
            for attempt in attempts:
                try:
                    await attempt
                except ValueError as e:
                    self.errors.append(str(e))
            return
        call = await turn.start_tool(
            "edit a.rs",
            kind=ToolKind.EDIT,
            status=ToolCallStatus.IN_PROGRESS,
            content=["proposing", Diff("/w/a.rs", "new\n", "old\n"), TerminalContent("term-1")],
            locations=[ToolCallLocation("/w/a.rs", 1), {"path": "/w/b.rs"}],
            raw_input={"path": "a.rs"},
        )
        await turn.update_tool(call, title="edit a.rs (2)", locations=[ToolCallLocation("/w/a.rs", 7)])
        await turn.update_tool(call, status="completed", raw_output={"ok": True}, content=[Diff("/w/new.rs", "x\n")])
        await turn.text("edited")


def test_a_runner_turn_sends_tool_calls_with_every_field_and_load_replays_them_as_they_ended() -> None:
    async def body() -> None:
        runner = Runner(MemoryStore(), EditTurns())
        client = RecordingClient()
        async with connect(runner.agent(), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "edit"}])  # type: ignore[list-item]
            calls = [u.model_dump(by_alias=True, exclude_none=True) for _, u in client.updates if u.session_update.startswith("tool_call")]
        for update in calls:
            validate_def("SessionUpdate", update)
        started, renamed, done = calls
        call_id = started.pop("toolCallId")
        assert started == {
            "sessionUpdate": "tool_call",
            "title": "edit a.rs",
            "kind": "edit",
            "status": "in_progress",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "proposing"}},
                {"type": "diff", "path": "/w/a.rs", "oldText": "old\n", "newText": "new\n"},
                {"type": "terminal", "terminalId": "term-1"},
            ],
            "locations": [{"path": "/w/a.rs", "line": 1}, {"path": "/w/b.rs"}],
            "rawInput": {"path": "a.rs"},
        }
        assert renamed == {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "title": "edit a.rs (2)",
            "locations": [{"path": "/w/a.rs", "line": 7}],
        }
        assert done == {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "completed",
            "content": [{"type": "diff", "path": "/w/new.rs", "newText": "x\n"}],
            "rawOutput": {"ok": True},
        }
        replay = RecordingClient()
        async with connect(runner.agent(), replay) as conn:
            await conn.load_session(session_id=sid, cwd="/tmp", mcp_servers=[])
            replayed = [u.model_dump(by_alias=True, exclude_none=True) for _, u in replay.updates if u.session_update.startswith("tool_call")]
        # One `tool_call`, as the call ended: every change applied.
        assert len(replayed) == 1, replayed
        assert {k: v for k, v in replayed[0].items() if k != "toolCallId"} == {
            "sessionUpdate": "tool_call",
            "title": "edit a.rs (2)",
            "kind": "edit",
            "status": "completed",
            "content": [{"type": "diff", "path": "/w/new.rs", "newText": "x\n"}],
            "locations": [{"path": "/w/a.rs", "line": 7}],
            "rawInput": {"path": "a.rs"},
            "rawOutput": {"ok": True},
        }, replayed

    run(body)


def test_invalid_tool_call_fields_raise_and_the_turn_goes_on() -> None:
    async def body() -> None:
        turns = EditTurns()
        client = RecordingClient()
        async with connect(Runner(MemoryStore(), turns).agent(), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "bad"}])  # type: ignore[list-item]
            assert response.stop_reason == "end_turn"
        assert len(turns.errors) == 3, turns.errors
        assert "edti" in turns.errors[0] and "path" in turns.errors[1] and "newText" in turns.errors[2], turns.errors
        assert not [u for _, u in client.updates if u.session_update.startswith("tool_call")]

    run(body)


class ToolSession(RichSession):
    """Each turn announces a tool call with a diff, a terminal and locations, renames it, and
    finishes it with a raw output, through the harness events."""

    async def _turn(self, command: str, turn_id: str, prompt: Prompt) -> None:
        def event(kind: Any, durable: bool = False, command_id: Optional[str] = None) -> Event:
            event_class = EventClass.ENDURING if durable else EventClass.EPHEMERAL
            return Event(kind, event_class, command_id=command_id, loop_id="main", turn_id=turn_id)

        await self.events.publish(event(TurnStarted(UserMessage([b.to_json() for b in prompt.content])), True, command))
        started = ToolCallStarted(
            "c1",
            "edit a.rs",
            ToolKind.EDIT,
            {"path": "a.rs"},
            status=ToolCallStatus.IN_PROGRESS,
            content=[Diff("/w/a.rs", "new\n", "old\n"), TerminalContent("term-1"), {"type": "text", "text": "t"}],
            locations=[ToolCallLocation("/w/a.rs", 1)],
        )
        await self.events.publish(event(started))
        await self.events.publish(event(ToolCallProgress("c1", title="edit a.rs (2)", kind=ToolKind.READ)))
        await self.events.publish(event(ToolCallCompleted("c1", [], raw_output={"ok": True})))
        await self.events.publish(event(TurnDone(), True))


def test_a_live_session_sends_tool_calls_with_every_field_through_its_events() -> None:
    events = [
        ToolCallStarted("c", "t", ToolKind.EDIT, None, ToolCallStatus.IN_PROGRESS, [{"type": "diff", "path": "/a", "oldText": None, "newText": "n"}], [ToolCallLocation("/a", 2)], {"r": 1}),
        ToolCallProgress("c", title="u", locations=[ToolCallLocation("/b")], raw_input=[1]),
        ToolCallCompleted("c", [{"type": "text", "text": "done"}], True, kind=ToolKind.READ, raw_output=2),
    ]
    for kind in events:
        event = Event(kind)
        assert Event.from_json(event.to_json()) == event
    assert ToolCallProgress("c").to_json() == {"type": "tool_call_progress", "call_id": "c"}, "absent: unchanged"

    class Host(SessionHost):
        async def new_session(self, setup: Setup) -> LiveSession:
            return ToolSession("tools", setup)

    async def body() -> None:
        client = RecordingClient()
        async with connect(Agent(Options(Host())), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
            assert response.stop_reason == "end_turn"
            calls = [u.model_dump(by_alias=True, exclude_none=True) for _, u in client.updates if u.session_update.startswith("tool_call")]
        for update in calls:
            validate_def("SessionUpdate", update)
        assert calls == [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": "edit a.rs",
                "kind": "edit",
                "status": "in_progress",
                "content": [
                    {"type": "diff", "path": "/w/a.rs", "oldText": "old\n", "newText": "new\n"},
                    {"type": "terminal", "terminalId": "term-1"},
                    {"type": "content", "content": {"type": "text", "text": "t"}},
                ],
                "locations": [{"path": "/w/a.rs", "line": 1}],
                "rawInput": {"path": "a.rs"},
            },
            {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "edit a.rs (2)", "kind": "read"},
            {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "rawOutput": {"ok": True}},
        ], calls

    run(body)


def test_a_repeated_identical_title_from_a_live_session_is_announced_once() -> None:
    class TitledSession(RichSession):
        async def _turn(self, command: str, turn_id: str, prompt: Prompt) -> None:
            at = {"loop_id": "main", "turn_id": turn_id}
            await self.events.publish(Event(TurnStarted(UserMessage([b.to_json() for b in prompt.content])), EventClass.ENDURING, command_id=command, **at))
            for title in ("Same", "Same", "Other", "Other"):
                await self.events.publish(Event(SessionMetaChanged(title=title), EventClass.ENDURING, **at))
            await self.events.publish(Event(TurnDone(), EventClass.ENDURING, **at))

    class Host(SessionHost):
        async def new_session(self, setup: Setup) -> LiveSession:
            return TitledSession("titled", setup)

    async def body() -> None:
        client = RecordingClient()
        async with connect(Agent(Options(Host())), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            for _ in range(2):
                await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
            titles = [u.title for _, u in client.updates if u.session_update == "session_info_update"]
        assert titles == ["Same", "Other", "Same", "Other"], titles

    run(body)
