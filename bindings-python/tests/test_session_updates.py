"""What ACP gates behind a client capability, from Python: notices, plans with ids, subagents and
compaction reports (each sent only to a client that advertised it, said another way to any other),
the client's system prompt, and the tool call's programmatic name. Driven through the wire as a
client would — the Python demo over stdio, and small runners and hosts in this process — with and
without each capability; every message the agent sends is checked against the schema
(conftest's ``SchemaObserver``). The demo's transcripts are compared with the Rust demo's when its
binary is known (``ACP_FACADE_RUST_DEMO``, set by scripts/test).

The official Python client does not read these updates yet, so the client here is raw JSON-RPC.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

import pytest
from acp.connection import StreamDirection, StreamEvent

from acp_facade import (
    Agent,
    AiMessage,
    ClientCapabilities,
    Event,
    EventClass,
    LiveSession,
    MemoryStore,
    Notice,
    NoticeSeverity,
    Options,
    PlanChanged,
    PlanEntry,
    PlanRemoved,
    Runner,
    SessionHost,
    SessionMessage,
    SessionMessageChunk,
    Setup,
    StepDone,
    StopReason,
    Subagent,
    SubagentChanged,
    SystemPrompt,
    TextContent,
    ToolCallCompleted,
    ToolCallProgress,
    ToolCallRequest,
    ToolCallStarted,
    ToolResultMessage,
    Turn,
    TurnDone,
    TurnRunner,
    TurnStarted,
    UserMessage,
)
from conftest import DEMO, SCHEMA, SchemaObserver, run

# Every capability of issue 34 a client can advertise, by name (ACP `ClientCapabilities`).
NOTICES: Dict[str, Any] = {"session": {"notices": {}}}
COMPACTION: Dict[str, Any] = {"session": {"compaction": {}}}
SUBAGENTS: Dict[str, Any] = {"subagents": {}}
PLANS: Dict[str, Any] = {"plan": {}}
ALL: Dict[str, Any] = {"session": {"notices": {}, "compaction": {}}, "subagents": {}, "plan": {}}

# The updates these capabilities allow exist only in a schema that knows them (the ACP v1 of
# agent-client-protocol-schema 1.20.0); the one the suite pins may predate them, and a message it
# does not know is a violation. The tests that make the agent send them need the newer schema.
_UPDATES = {
    variant.get("properties", {}).get("sessionUpdate", {}).get("const")
    for variant in SCHEMA["$defs"].get("SessionUpdate", {}).get("oneOf", [])
}
newest_v1 = pytest.mark.skipif(
    not {"notice", "plan_update", "subagent_update", "compaction_update"} <= _UPDATES,
    reason="the pinned schema predates notices, plans with ids, subagents and compaction reports",
)

APPEND = {"mode": "append", "content": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": " Very."}]}
OVERRIDE = {"mode": "override", "content": [{"type": "text", "text": "Only this."}]}
OWN = "You are the acp-facade demo."


class Wire:
    """A raw ACP client over a pair of asyncio streams: requests one at a time, the agent's
    permission requests answered ``allow_once``, every message kept; each message the agent sends
    goes through conftest's :class:`SchemaObserver`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.observer = SchemaObserver()
        self.received: List[Dict[str, Any]] = []
        self.next_id = 0

    async def send(self, message: Dict[str, Any]) -> None:
        self.observer(StreamEvent(StreamDirection.OUTGOING, message))
        self.writer.write((json.dumps(message) + "\n").encode())
        await self.writer.drain()

    async def call(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        """Sends a request; returns its response (``result`` or ``error``) once it arrives."""
        self.next_id += 1
        sent = self.next_id
        await self.send({"jsonrpc": "2.0", "id": sent, "method": method, "params": params})
        while True:
            line = await asyncio.wait_for(self.reader.readline(), 30)
            assert line, "the agent hung up"
            message: Dict[str, Any] = json.loads(line)
            self.observer(StreamEvent(StreamDirection.INCOMING, message))
            self.received.append(message)
            if "method" in message and "id" in message:
                assert message["method"] == "session/request_permission", message
                outcome = {"outcome": "selected", "optionId": "allow_once"}
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})
            elif message.get("id") == sent and "method" not in message:
                return message

    async def result(self, method: str, params: Dict[str, Any]) -> Any:
        response = await self.call(method, params)
        assert "result" in response, response
        return response["result"]

    async def initialize(self, capabilities: Optional[Dict[str, Any]]) -> Any:
        params: Dict[str, Any] = {"protocolVersion": 1}
        if capabilities is not None:
            params["clientCapabilities"] = capabilities
        return await self.result("initialize", params)

    async def new_session(self, system_prompt: Optional[Dict[str, Any]] = None) -> str:
        params: Dict[str, Any] = {"cwd": "/tmp", "mcpServers": []}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        session_id: str = (await self.result("session/new", params))["sessionId"]
        return session_id

    async def prompt(self, session_id: str, text: str) -> List[Dict[str, Any]]:
        """The updates of one prompt turn (it must end ``end_turn``)."""
        start = len(self.received)
        result = await self.result("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
        assert result["stopReason"] == "end_turn", result
        return self.updates(start)

    def updates(self, start: int = 0) -> List[Dict[str, Any]]:
        """The ``session/update`` updates received since message ``start``, but the
        ``available_commands_update`` of a session's first prompt (of no interest here)."""
        return [
            m["params"]["update"]
            for m in self.received[start:]
            if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] != "available_commands_update"
        ]

    def assert_schema_clean(self) -> None:
        assert not self.observer.violations, self.observer.violations
        assert self.observer.checked > 0


def kinds(updates: List[Dict[str, Any]]) -> List[str]:
    return [u["sessionUpdate"] for u in updates]


def chunks(updates: List[Dict[str, Any]], kind: str = "agent_message_chunk") -> List[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == kind]


async def with_demo(
    body: Callable[[Wire], Awaitable[None]], command: Tuple[str, ...] = (), validate: bool = True
) -> None:
    """Runs ``body`` against a demo agent (``command``; default: the Python demo) over stdio; with
    ``validate``, checks that every message it sent was valid."""
    argv = command or (sys.executable, str(DEMO))
    process = await asyncio.create_subprocess_exec(
        *argv, "--store", ":memory:", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    wire = Wire(process.stdout, process.stdin)
    try:
        await body(wire)
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 15)
    if validate:
        wire.assert_schema_clean()


async def with_agent(agent: Agent, body: Callable[[Wire], Awaitable[None]]) -> None:
    """Runs ``body`` against ``agent`` served in this loop over a socket pair."""
    ours, theirs = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=ours)
    reader, writer = await asyncio.open_connection(sock=theirs)
    serving = asyncio.ensure_future(agent.serve(agent_reader, agent_writer))
    wire = Wire(reader, writer)
    try:
        await body(wire)
    finally:
        writer.close()
        await asyncio.wait_for(serving, 15)
    wire.assert_schema_clean()


# ---- the demo's lines (docs/DEMO.md, issue 34) --------------------------------------------------


def test_the_demo_says_in_chunks_what_a_client_without_the_capabilities_cannot_receive() -> None:
    async def body(wire: Wire) -> None:
        init = await wire.initialize(None)
        assert init["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {}
        sid = await wire.new_session()
        assert chunks(await wire.prompt(sid, "notice hello there")) == ["notice: hello there"]
        assert chunks(await wire.prompt(sid, "subagent one two  three")) == ["subagent: one two  three"]
        planned = await wire.prompt(sid, "plan 2")
        assert kinds(planned) == ["plan", "plan", "plan", "agent_message_chunk", "usage_update"]
        assert [[e["status"] for e in u["entries"]] for u in planned[:3]] == [
            ["pending", "pending"],
            ["completed", "pending"],
            ["completed", "completed"],
        ]
        compacted = await wire.prompt(sid, "/compact")
        assert not {"compaction_update", "compaction_summary_chunk"} & set(kinds(compacted)), compacted

    run(lambda: with_demo(body))


@newest_v1
def test_the_demo_sends_notices_subagents_plan_ids_and_compaction_reports_to_a_client_that_has_them() -> None:
    async def body(wire: Wire) -> None:
        await wire.initialize(ALL)
        sid = await wire.new_session()

        noticed = await wire.prompt(sid, "notice hello there")
        assert [u for u in noticed if u["sessionUpdate"] == "notice"] == [
            {"sessionUpdate": "notice", "severity": "info", "title": "hello there"}
        ]
        assert chunks(noticed) == []

        exchanged = await wire.prompt(sid, "subagent one two  three")
        assert kinds(exchanged)[:7] == [
            "subagent_update",
            "session_message",
            "session_message",
            "session_message_chunk",
            "session_message_chunk",
            "session_message_chunk",
            "subagent_update",
        ]
        started, sent, replied = exchanged[0], exchanged[1], exchanged[2]
        child = started["sessionId"]
        assert started["title"] == "subagent" and child != sid
        assert (sent["senderSessionId"], sent["recipientSessionId"]) == (sid, child)
        assert sent["content"] == [{"type": "text", "text": "one two  three"}]
        assert (replied["senderSessionId"], replied["recipientSessionId"]) == (child, sid)
        assert chunks(exchanged, "session_message_chunk") == ["one ", "two ", "three"]
        assert {u["messageId"] for u in exchanged[3:6]} == {replied["messageId"]}
        assert exchanged[6] == {"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "idle", "stopReason": "end_turn"}}
        assert chunks(exchanged) == ["subagent: done"]

        planned = await wire.prompt(sid, "plan 2")
        assert kinds(planned) == ["plan_update"] * 3 + ["agent_message_chunk", "usage_update"]
        assert {u["plan"]["planId"] for u in planned[:3]} == {"plan"}
        assert [e["status"] for e in planned[2]["plan"]["entries"]] == ["completed", "completed"]

        compacted = await wire.prompt(sid, "/compact")
        reports = [u for u in compacted if u["sessionUpdate"].startswith("compaction")]
        assert [(u["sessionUpdate"], u.get("status")) for u in reports] == [
            ("compaction_update", "in_progress"),
            ("compaction_summary_chunk", None),
            ("compaction_update", "completed"),
        ]
        assert reports[1]["content"] == {"type": "text", "text": "The conversation so far, compacted."}

        # session/load replays the exchange with the subagent, the compaction and the plan.
        start = len(wire.received)
        await wire.result("session/load", {"sessionId": sid, "cwd": "/tmp", "mcpServers": []})
        replayed = kinds(wire.updates(start))
        assert "notice" not in replayed
        assert {"subagent_update", "session_message", "session_message_chunk", "plan_update"} <= set(replayed)

    run(lambda: with_demo(body))


@newest_v1
@pytest.mark.parametrize("capabilities", [NOTICES, COMPACTION, SUBAGENTS, PLANS], ids=["notices", "compaction", "subagents", "plan"])
def test_each_capability_alone_lets_through_only_its_own_updates(capabilities: Dict[str, Any]) -> None:
    async def body(wire: Wire) -> None:
        await wire.initialize(capabilities)
        sid = await wire.new_session()
        updates: List[Dict[str, Any]] = []
        for line in ("notice hi", "subagent hi", "plan 1", "/compact"):
            updates += await wire.prompt(sid, line)
        sent = set(kinds(updates))
        assert ("notice" in sent) == (capabilities is NOTICES)
        assert ("compaction_update" in sent) == (capabilities is COMPACTION)
        assert ("subagent_update" in sent) == (capabilities is SUBAGENTS)
        assert ("plan_update" in sent) == (capabilities is PLANS)
        assert ("plan" in sent) == (capabilities is not PLANS)

    run(lambda: with_demo(body))


def test_the_demo_applies_the_client_s_system_prompt_kept_with_the_session() -> None:
    async def body(wire: Wire) -> None:
        await wire.initialize(None)
        plain = await wire.new_session()
        assert chunks(await wire.prompt(plain, "system")) == [OWN]
        overridden = await wire.new_session(OVERRIDE)
        assert chunks(await wire.prompt(overridden, "system")) == ["Only this."]
        sid = await wire.new_session(APPEND)
        assert chunks(await wire.prompt(sid, "system")) == [OWN + "\nBe brief. Very."]
        # A load or resume without a system prompt keeps the session's.
        params = {"sessionId": sid, "cwd": "/tmp", "mcpServers": []}
        await wire.result("session/load", params)
        await wire.result("session/resume", params)
        assert chunks(await wire.prompt(sid, "system")) == [OWN + "\nBe brief. Very."]

    run(lambda: with_demo(body))


def test_the_demo_replaces_the_system_prompt_with_one_a_resume_carries() -> None:
    async def body(wire: Wire) -> None:
        await wire.initialize(None)
        sid = await wire.new_session(APPEND)
        await wire.prompt(sid, "system")
        await wire.result("session/resume", {"sessionId": sid, "cwd": "/tmp", "mcpServers": [], "systemPrompt": OVERRIDE})
        assert chunks(await wire.prompt(sid, "system")) == ["Only this."]

    run(lambda: with_demo(body))


def test_the_demo_s_tool_call_carries_its_name_and_drip_streams_its_chunks() -> None:
    async def body(wire: Wire) -> None:
        await wire.initialize(None)
        sid = await wire.new_session()
        tool = await wire.prompt(sid, "tool grep")
        call = next(u for u in tool if u["sessionUpdate"] == "tool_call")
        assert (call["title"], call["name"], call["kind"]) == ("grep", "grep", "execute")
        assert chunks(tool) == ["grep: done"]
        assert chunks(await wire.prompt(sid, "drip 3 5")) == ["d1 ", "d2 ", "d3 "]

    run(lambda: with_demo(body))


# ---- the Turn API, in runners and hosts of this process -----------------------------------------


class Probe(TurnRunner):
    """Runs the test's ``body`` as each turn, keeping what it returns."""

    def __init__(self, body: Callable[[Turn], Awaitable[Any]], accepts: bool = True) -> None:
        self.body = body
        self.accepts = accepts
        self.seen: List[Any] = []

    async def run_turn(self, turn: Turn) -> StopReason:
        self.seen.append(await self.body(turn))
        return StopReason.END_TURN

    def accepts_system_prompt(self) -> bool:
        return self.accepts


async def one_turn(
    body: Callable[[Turn], Awaitable[Any]], capabilities: Optional[Dict[str, Any]]
) -> Tuple[Any, List[Dict[str, Any]], str]:
    """What ``body`` returned in one turn of a client advertising ``capabilities``, the turn's
    updates and the session's id."""
    probe = Probe(body)
    out: List[Any] = []

    async def client(wire: Wire) -> None:
        await wire.initialize(capabilities)
        sid = await wire.new_session()
        out.extend([await wire.prompt(sid, "go"), sid])

    await with_agent(Runner(MemoryStore(), probe).agent(), client)
    return probe.seen[0], out[0], out[1]


async def notices_and_plans(turn: Turn) -> Dict[str, Any]:
    seen: Dict[str, Any] = {"capabilities": turn.client_capabilities}
    seen["warning"] = await turn.notice("Heads up", "warning", description="Details.")
    seen["error"] = await turn.notice("Broken", NoticeSeverity.ERROR)
    with pytest.raises(ValueError, match="'loud'"):
        await turn.notice("Never sent", "loud")
    entries: List[Any] = [PlanEntry("a"), {"content": "b", "priority": "high", "status": "completed"}]
    seen["plan"] = await turn.update_plan("p1", entries)
    seen["markdown"] = await turn.update_plan_markdown("p2", "# Plan\n- a")
    seen["removed"] = await turn.remove_plan("p1")
    return seen


@newest_v1
def test_notices_and_plans_with_ids_reach_a_client_that_advertised_them() -> None:
    async def body() -> None:
        seen, updates, _ = await one_turn(notices_and_plans, ALL)
        assert seen["capabilities"] == ClientCapabilities(notices=True, compaction=True, subagents=True, plan_operations=True)
        assert all(seen[k] is True for k in ("warning", "error", "plan", "markdown", "removed")), seen
        assert updates[:5] == [
            {"sessionUpdate": "notice", "severity": "warning", "title": "Heads up", "description": "Details."},
            {"sessionUpdate": "notice", "severity": "error", "title": "Broken"},
            {
                "sessionUpdate": "plan_update",
                "plan": {
                    "type": "items",
                    "planId": "p1",
                    "entries": [
                        {"content": "a", "priority": "medium", "status": "pending"},
                        {"content": "b", "priority": "high", "status": "completed"},
                    ],
                },
            },
            {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p2", "content": "# Plan\n- a"}},
            {"sessionUpdate": "plan_removed", "planId": "p1"},
        ], updates

    run(body)


def test_a_client_without_notices_or_plan_operations_gets_whole_plans_and_no_notice() -> None:
    async def body() -> None:
        seen, updates, _ = await one_turn(notices_and_plans, None)
        assert seen["capabilities"] == ClientCapabilities()
        assert not any(seen[k] for k in ("warning", "error", "plan", "markdown", "removed")), seen
        assert kinds(updates) == ["plan", "plan", "plan"]
        assert [[e["content"] for e in u["entries"]] for u in updates[:3]] == [["a", "b"], [], []]

    run(body)


async def exchange(turn: Turn) -> Tuple[Subagent, str, str]:
    child = await turn.start_subagent("helper")
    sent = await child.send("do it")
    replied = await child.reply(["ok ", "done"])
    await child.finish("max_tokens")
    return child, sent, replied


@pytest.mark.parametrize("capabilities", [pytest.param(SUBAGENTS, marks=newest_v1), None], ids=["subagents", "none"])
def test_a_subagent_exchange_is_shown_to_a_client_that_advertised_subagents(capabilities: Optional[Dict[str, Any]]) -> None:
    async def body() -> None:
        (child, sent, replied), updates, sid = await one_turn(exchange, capabilities)
        assert child.session_id.startswith(sid + "/") and sent != replied
        assert repr(child) == f"Subagent(session_id={child.session_id!r})"
        if capabilities is None:
            assert not child.is_visible
            assert kinds(updates) == []
            return
        assert child.is_visible
        assert updates[:5] == [
            {"sessionUpdate": "subagent_update", "sessionId": child.session_id, "title": "helper"},
            {
                "sessionUpdate": "session_message",
                "messageId": sent,
                "senderSessionId": sid,
                "recipientSessionId": child.session_id,
                "content": [{"type": "text", "text": "do it"}],
            },
            {"sessionUpdate": "session_message", "messageId": replied, "senderSessionId": child.session_id, "recipientSessionId": sid},
            {"sessionUpdate": "session_message_chunk", "messageId": replied, "content": {"type": "text", "text": "ok "}},
            {"sessionUpdate": "session_message_chunk", "messageId": replied, "content": {"type": "text", "text": "done"}},
        ], updates
        assert updates[5] == {
            "sessionUpdate": "subagent_update",
            "sessionId": child.session_id,
            "state": {"state": "idle", "stopReason": "max_tokens"},
        }

    run(body)


def test_a_turn_gets_the_client_s_system_prompt_typed_and_composes_its_own_with_it() -> None:
    async def seen(turn: Turn) -> Tuple[Optional[SystemPrompt], str]:
        return turn.system_prompt, turn.compose_system_prompt("Own.")

    async def body() -> None:
        for accepts in (True, False):
            probe = Probe(seen, accepts)

            async def client(wire: Wire) -> None:
                init = await wire.initialize(None)
                assert ("systemPrompt" in init["agentCapabilities"]["sessionCapabilities"]) is accepts
                for system_prompt in (None, APPEND, OVERRIDE):
                    await wire.prompt(await wire.new_session(system_prompt), "go")

            await with_agent(Runner(MemoryStore(), probe).agent(), client)
            if not accepts:  # a system prompt sent anyway is left out
                assert probe.seen == [(None, "Own.")] * 3
                continue
            appended = SystemPrompt([TextContent("Be brief."), TextContent(" Very.")], "append")
            assert probe.seen == [
                (None, "Own."),
                (appended, "Own.\nBe brief. Very."),
                (SystemPrompt([TextContent("Only this.")], "override"), "Only this."),
            ]
            assert appended.text == "Be brief. Very." and appended.to_json() == APPEND
            assert SystemPrompt.from_json(OVERRIDE).mode == "override"

    run(body)


def test_accepts_system_prompt_must_be_a_method() -> None:
    class Flagged(TurnRunner):
        accepts_system_prompt = True  # type: ignore[assignment]

        async def run_turn(self, turn: Turn) -> StopReason:
            return StopReason.END_TURN

    with pytest.raises(TypeError, match="Flagged.accepts_system_prompt must be a method returning a bool, not a bool"):
        Runner(MemoryStore(), Flagged())
    assert TurnRunner().accepts_system_prompt() is False


class Compacting(TurnRunner):
    """Compacts with whatever summary it is given."""

    def __init__(self, summary: Any) -> None:
        self.summary = summary

    async def run_turn(self, turn: Turn) -> StopReason:
        return StopReason.END_TURN

    async def compact(self, session_id: str) -> Any:
        return self.summary


async def compaction(summary: Any, capabilities: Optional[Dict[str, Any]]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """The ``/compact`` prompt's response and updates."""
    out: List[Any] = []

    async def client(wire: Wire) -> None:
        await wire.initialize(capabilities)
        sid = await wire.new_session()
        start = len(wire.received)
        prompt = [{"type": "text", "text": "/compact"}]
        out.extend([await wire.call("session/prompt", {"sessionId": sid, "prompt": prompt}), wire.updates(start)])

    await with_agent(Runner(MemoryStore(), Compacting(summary)).agent(), client)
    return out[0], out[1]


@newest_v1
def test_compact_s_summary_reaches_a_client_that_advertised_compaction() -> None:
    async def body() -> None:
        response, updates = await compaction("Shorter now.", COMPACTION)
        assert response["result"] == {"stopReason": "end_turn"}
        assert [(u["sessionUpdate"], u.get("status"), u.get("content")) for u in updates] == [
            ("compaction_update", "in_progress", None),
            ("compaction_summary_chunk", None, {"type": "text", "text": "Shorter now."}),
            ("compaction_update", "completed", None),
        ]
        _, updates = await compaction(None, COMPACTION)
        assert kinds(updates) == ["compaction_update", "compaction_update"]
        _, updates = await compaction("Shorter now.", None)
        assert kinds(updates) == []

    run(body)


def test_compact_returning_neither_a_str_nor_none_fails_the_compaction_saying_so() -> None:
    async def body() -> None:
        response, updates = await compaction(42, None)
        assert "error" in response, response
        assert "`compact` must return the summary (a str) or None, not int" in json.dumps(response["error"])
        assert kinds(updates) == []

    run(body)


def test_a_tool_call_is_announced_and_changed_with_its_name() -> None:
    async def body(turn: Turn) -> None:
        call = await turn.start_tool("Search the files", name="grep")
        await turn.update_tool(call, name="ripgrep", status="completed")

    async def run_it() -> None:
        _, updates, _ = await one_turn(body, None)
        assert [(u["sessionUpdate"], u.get("title"), u.get("name")) for u in updates[:2]] == [
            ("tool_call", "Search the files", "grep"),
            ("tool_call_update", None, "ripgrep"),
        ]

    run(run_it)


class Recorder(SessionHost):
    """A host that keeps each session's setup."""

    def __init__(self) -> None:
        self.setups: List[Setup] = []

    async def new_session(self, setup: Setup) -> LiveSession:
        self.setups.append(setup)
        return Publishing(f"s{len(self.setups)}")


# What a host's session publishes in a turn, in the core's form; the client sees each as the
# update named beside it, if it advertised its capability.
PUBLISHED: List[Tuple[Any, str]] = [
    (ToolCallStarted("c1", "Search the files", input={"q": "x"}, tool_name="grep"), "tool_call"),
    (ToolCallCompleted("c1", tool_name="ripgrep"), "tool_call_update"),
    (Notice({"severity": "warning", "title": "Careful"}), "notice"),
    (PlanChanged({"plan": {"type": "markdown", "planId": "p", "content": "- a"}}), "plan_update"),
    (PlanRemoved({"planId": "p"}), "plan_removed"),
    (SubagentChanged({"sessionId": "s1/child", "title": "child"}), "subagent_update"),
    (SessionMessage({"messageId": "m1", "senderSessionId": "s1/child", "recipientSessionId": "s1"}), "session_message"),
    (SessionMessageChunk({"messageId": "m1", "content": {"type": "text", "text": "hi"}}), "session_message_chunk"),
]


class Publishing(LiveSession):
    """A session whose one turn publishes ``PUBLISHED``."""

    async def submit(self, prompt: List[Any]) -> str:
        command = f"{self.id}/c1"

        def event(kind: Any, command_id: Optional[str] = None) -> Event:
            enduring = not isinstance(kind, (Notice, ToolCallStarted, ToolCallCompleted))
            event_class = EventClass.ENDURING if enduring else EventClass.EPHEMERAL
            return Event(kind, event_class, command_id=command_id, loop_id="main", turn_id="t1")

        await self.events.publish(event(TurnStarted(UserMessage(prompt)), command))
        for kind, _ in PUBLISHED:
            await self.events.publish(event(kind))
        await self.events.publish(event(TurnDone()))
        return command

    async def interrupt(self) -> None:
        return None

    async def respond_gate(self, gate_id: str, response: Any) -> None:
        return None


def test_a_host_that_takes_system_prompts_gets_them_in_its_setup() -> None:
    async def body() -> None:
        for accepts in (True, False):
            host = Recorder()
            options = Options(host, system_prompt=True) if accepts else Options(host).system_prompt(False)

            async def client(wire: Wire) -> None:
                init = await wire.initialize(None)
                assert ("systemPrompt" in init["agentCapabilities"]["sessionCapabilities"]) is accepts
                await wire.new_session(OVERRIDE)
                await wire.new_session()

            await with_agent(Agent(options), client)
            expected = SystemPrompt([TextContent("Only this.")], "override") if accepts else None
            assert [s.system_prompt for s in host.setups] == [expected, None]

    run(body)


def test_the_new_event_kinds_and_tool_names_round_trip_through_their_core_form() -> None:
    events = [Event(kind) for kind, _ in PUBLISHED] + [
        Event(ToolCallProgress("c1", tool_name="grep")),
        Event(StepDone([AiMessage(tool_calls=[ToolCallRequest("c1", "Search", tool_name="grep")])])),
        Event(StepDone([ToolResultMessage("c1", tool_name="rg")])),
    ]
    for event in events:
        assert Event.from_json(event.to_json()) == event
    assert events[0].to_json()["kind"]["tool_name"] == "grep"
    assert "tool_name" not in Event(ToolCallStarted("c1", "Search")).to_json()["kind"]


@pytest.mark.parametrize("capabilities", [pytest.param(ALL, marks=newest_v1), None], ids=["all", "none"])
def test_a_host_s_session_publishes_the_gated_updates_as_events(capabilities: Optional[Dict[str, Any]]) -> None:
    async def client(wire: Wire) -> None:
        await wire.initialize(capabilities)
        updates = await wire.prompt(await wire.new_session(), "go")
        assert (updates[0]["title"], updates[0]["name"]) == ("Search the files", "grep")
        assert (updates[1]["status"], updates[1]["name"]) == ("completed", "ripgrep")
        if capabilities is None:  # plans degrade to whole plans (a Markdown one and a removal: empty)
            assert updates[2:] == [{"sessionUpdate": "plan", "entries": []}] * 2
            return
        assert kinds(updates) == [name for _, name in PUBLISHED]
        assert updates[2] == {"sessionUpdate": "notice", "severity": "warning", "title": "Careful"}
        assert updates[4] == {"sessionUpdate": "plan_removed", "planId": "p"}

    run(lambda: with_agent(Agent(Options(Recorder())), client))


def normalised(messages: List[Dict[str, Any]]) -> List[Any]:
    """``messages`` with each session id replaced by its rank (``S0``, ``S1`` …) and update times
    by ``T``: what two runs of the same script have in common."""
    ids = [m["result"]["sessionId"] for m in messages if isinstance(m.get("result"), dict) and "sessionId" in m["result"]]
    text = json.dumps(messages, sort_keys=True)
    for rank, session_id in enumerate(ids):
        text = text.replace(session_id, f"S{rank}")
    out: List[Any] = json.loads(text)
    for message in out:
        update = message.get("params", {}).get("update", {})
        if "updatedAt" in update:
            update["updatedAt"] = "T"
    return out


def test_the_python_demo_sends_what_the_rust_demo_sends() -> None:
    rust = os.environ.get("ACP_FACADE_RUST_DEMO")
    if not rust:
        pytest.skip("ACP_FACADE_RUST_DEMO is not set (scripts/test sets it): the demos are not compared")
    lines = ["notice hello", "system", "subagent one two", "tool grep", "plan 2", "/compact", "drip 2 1", "echo me"]

    async def transcript(capabilities: Optional[Dict[str, Any]], command: Tuple[str, ...]) -> List[Any]:
        wires: List[Wire] = []

        async def body(wire: Wire) -> None:
            wires.append(wire)
            await wire.initialize(capabilities)
            for system_prompt in (None, APPEND, OVERRIDE):
                sid = await wire.new_session(system_prompt)
                for line in lines:
                    await wire.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": line}]})
                params = {"sessionId": sid, "cwd": "/tmp", "mcpServers": []}
                await wire.call("session/load", params)
                await wire.call("session/resume", {**params, "systemPrompt": APPEND})
                await wire.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "system"}]})

        # The schema is the other tests' business (it may predate what ALL lets through).
        await with_demo(body, command, validate=False)
        return normalised(wires[0].received)

    async def body() -> None:
        for capabilities in (None, ALL, NOTICES, COMPACTION, SUBAGENTS, PLANS):
            rust_said = await transcript(capabilities, (rust,))
            python_said = await transcript(capabilities, (sys.executable, str(DEMO)))
            assert python_said == rust_said, capabilities
            assert len(python_said) > 100

    run(body)
