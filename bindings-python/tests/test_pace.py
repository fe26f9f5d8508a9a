"""Back-pressure of the binding's synchronous calls (the core's ``pace`` policy), in-process over
streams so that the client reads on the very loop the producer blocks: ``turn.text`` and
``EventHub.publish`` in a tight loop that never awaits are refused with ``RuntimeError`` at the
hard bound (16384 queued, ``acp_facade::pace::HARD_LIMIT``) while the client reads nothing, and
every call accepted before that still reaches the client, in order, once the producer awaits."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Awaitable, List, Optional

from acp_facade import (
    Agent,
    ContentBlock,
    Event,
    EventClass,
    GateResponse,
    LiveSession,
    MemoryStore,
    Options,
    Runner,
    SessionHost,
    Setup,
    TokenDelta,
    Turn,
    TurnDone,
    TurnRunner,
    TurnStarted,
    UserMessage,
)
from conftest import RecordingClient, connect, run

HARD_LIMIT = 16384
"""``acp_facade::pace::HARD_LIMIT``."""

NEVER = 10_000_000
"""More calls than a bounded queue can take."""


async def chunks_arrive(client: RecordingClient, count: int) -> List[str]:
    """The client's message chunks, once ``count`` have arrived."""
    for _ in range(1000):
        if len(client.chunks()) >= count:
            break
        await asyncio.sleep(0.01)
    return client.chunks()


class Flood(TurnRunner):
    """Streams text without awaiting until refused, then honours back-pressure."""

    def __init__(self) -> None:
        self.accepted = 0
        self.refusal: Optional[str] = None
        self.step_tail = ""

    async def run_turn(self, turn: Turn) -> None:
        last: Optional[Awaitable[None]] = None
        try:
            while self.accepted < NEVER:
                last = turn.text(f"{self.accepted} ")
                self.accepted += 1
        except RuntimeError as e:
            self.refusal = str(e)
        self.step_tail = turn.step_text()[-12:]
        assert last is not None
        await last
        await turn.text("end")


def test_a_turn_that_never_awaits_is_refused_at_the_hard_bound_and_loses_nothing() -> None:
    async def body() -> None:
        flood = Flood()
        client = RecordingClient()
        async with connect(Runner(MemoryStore(), flood).agent(), client, validate=False) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
            assert response.stop_reason == "end_turn"
            assert flood.refusal is not None and flood.refusal.startswith(f"{HARD_LIMIT} calls are queued"), flood.refusal
            assert HARD_LIMIT <= flood.accepted < NEVER
            assert flood.step_tail.endswith(f"{flood.accepted - 1} "), "a refused text is not in the step"
            expected = [f"{n} " for n in range(flood.accepted)] + ["end"]
            assert await chunks_arrive(client, len(expected)) == expected

    run(body)


class FloodSession(LiveSession):
    """Publishes a turn's token deltas without awaiting until refused, then honours back-pressure."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.accepted = 0
        self.refusal: Optional[str] = None
        self._turns = itertools.count(1)
        self._running: Optional["asyncio.Task[None]"] = None

    async def submit(self, prompt: List[ContentBlock]) -> str:
        command = f"{self.id}/c{next(self._turns)}"
        self._running = asyncio.ensure_future(self._turn(command, prompt))
        return command

    async def _turn(self, command: str, prompt: List[ContentBlock]) -> None:
        def event(kind: Any, event_class: EventClass = EventClass.EPHEMERAL, command_id: Optional[str] = None) -> Event:
            return Event(kind, event_class, command_id=command_id, loop_id="main", turn_id="t1")

        await self.events.publish(event(TurnStarted(UserMessage(prompt)), EventClass.ENDURING, command))
        last: Optional[Awaitable[None]] = None
        try:
            while self.accepted < NEVER:
                last = self.events.publish(event(TokenDelta(f"{self.accepted} ")))
                self.accepted += 1
        except RuntimeError as e:
            self.refusal = str(e)
        assert last is not None
        await last
        await self.events.publish(event(TurnDone(), EventClass.ENDURING))

    async def interrupt(self) -> None:
        return None

    async def respond_gate(self, gate_id: str, response: GateResponse) -> None:
        return None


def test_a_host_session_that_never_awaits_publish_is_refused_at_the_hard_bound_and_loses_nothing() -> None:
    session = FloodSession("flood-1")

    class Host(SessionHost):
        async def new_session(self, setup: Setup) -> LiveSession:
            return session

    async def body() -> None:
        client = RecordingClient()
        async with connect(Agent(Options(Host())), client, validate=False) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
            assert response.stop_reason == "end_turn"
            assert session.refusal is not None and session.refusal.startswith(f"{HARD_LIMIT} calls are queued")
            assert HARD_LIMIT <= session.accepted < NEVER
            expected = [f"{n} " for n in range(session.accepted)]
            assert await chunks_arrive(client, len(expected)) == expected

    run(body)


def test_operations_that_answer_nothing_are_paced_like_text_and_applied_in_call_order() -> None:
    # `usage`, `plan`, tool updates, `end_step` and the response `_meta` answer nothing: like
    # `text` they are queued and, while the queue is short, their awaitable is already complete
    # (awaiting one does not hand the loop over; it used to wait until the core had applied it,
    # two hand-overs between the threads each). The core still applies them in call order,
    # those queued just before `run_turn` returns included.
    suspended: List[str] = []

    class Paced(TurnRunner):
        async def run_turn(self, turn: Turn) -> None:
            asyncio.get_running_loop().call_soon(suspended.append, "the loop ran in between")
            await turn.text("a")
            await turn.plan([{"content": "step", "priority": "medium", "status": "pending"}])  # type: ignore[list-item]
            call = await turn.start_tool_call("t")
            await turn.tool_progress(call, content=[{"type": "text", "text": "half"}])  # type: ignore[list-item]
            assert suspended == ["the loop ran in between"]  # start_tool_call answers: it waited
            suspended.clear()
            asyncio.get_running_loop().call_soon(suspended.append, "the loop ran in between")
            await turn.complete_tool_call(call)
            await turn.update_tool(call, title="done")
            await turn.usage(1, 10)
            await turn.text("b")
            await turn.end_step()
            await turn.set_response_meta({"k": "v"})
            await turn.usage(2, 10)
            assert suspended == [], "an operation that answers nothing handed the loop over"

    async def go() -> RecordingClient:
        client = RecordingClient()
        async with connect(Runner(MemoryStore(), Paced()).agent(), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
            assert response.field_meta == {"k": "v"}
        return client

    client = run(go)
    assert client.kinds() == [
        "agent_message_chunk",
        "plan",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "tool_call_update",
        "usage_update",
        "agent_message_chunk",
        "usage_update",
    ], client.kinds()
    assert client.chunks() == ["a", "b"]
