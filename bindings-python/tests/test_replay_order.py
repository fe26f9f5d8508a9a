"""The replay order of ``session/load`` set from Python: ``Options(..., replay_order=...)`` and
``Options.replay_order``. A runner session of two turns (each a thought, text and a tool call, then
more text in a second step) is recorded on one connection and loaded on others, through the wire:
grouped by default (every question, then every answer, then the tool calls), turn by turn with
``"conversation"``; the same updates either way. A wrong order is a ``ValueError`` naming the
accepted ones, when the options are made."""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List

import pytest

from acp_facade import MemoryStore, Options, Runner, StopReason, ToolKind, Turn, TurnRunner, text_block
from conftest import ROOT, run
from test_session_updates import Wire, with_agent

sys.path.insert(0, str(ROOT / "examples" / "python"))
from host_example import EchoHost  # noqa: E402


class Turns(TurnRunner):
    """Every prompt ``q``: a step that thinks, answers and looks ``q`` up, then one that says done."""

    async def run_turn(self, turn: Turn) -> StopReason:
        q = turn.prompt_text()
        await turn.thought(f"thinking about {q}")
        await turn.text(f"answer to {q}")
        call = await turn.start_tool_call(f"look up {q}", ToolKind.SEARCH, {"q": q})
        await turn.complete_tool_call(call, [text_block(f"found {q}")])
        await turn.end_step()
        await turn.text(f"{q} done")
        await turn.usage(10, 100)
        return StopReason.END_TURN


def describe(update: Dict[str, Any]) -> str:
    kind: str = update["sessionUpdate"]
    if kind.endswith("_chunk"):
        return f"{kind}:{update['content']['text']}"
    if kind == "tool_call":
        return f"tool_call:{update['title']}:{update['status']}"
    return kind


async def record(runner: Runner) -> str:
    session_id = ""

    async def body(wire: Wire) -> None:
        nonlocal session_id
        await wire.initialize(None)
        session_id = await wire.new_session()
        for q in ("q1", "q2"):
            await wire.prompt(session_id, q)

    await with_agent(runner.agent(), body)
    return session_id


async def load(runner: Runner, session_id: str, options: Options) -> List[Dict[str, Any]]:
    replayed: List[Dict[str, Any]] = []

    async def body(wire: Wire) -> None:
        await wire.initialize(None)
        await wire.result("session/load", {"sessionId": session_id, "cwd": "/tmp", "mcpServers": []})
        replayed.extend(wire.updates())

    await with_agent(runner.agent(options), body)
    return replayed


GROUPED = [
    "user_message_chunk:q1",
    "user_message_chunk:q2",
    "agent_thought_chunk:thinking about q1",
    "agent_message_chunk:answer to q1",
    "agent_message_chunk:q1 done",
    "agent_thought_chunk:thinking about q2",
    "agent_message_chunk:answer to q2",
    "agent_message_chunk:q2 done",
    "tool_call:look up q1:completed",
    "tool_call:look up q2:completed",
    "usage_update",
]

CONVERSATION = [
    "user_message_chunk:q1",
    "agent_thought_chunk:thinking about q1",
    "agent_message_chunk:answer to q1",
    "tool_call:look up q1:completed",
    "agent_message_chunk:q1 done",
    "user_message_chunk:q2",
    "agent_thought_chunk:thinking about q2",
    "agent_message_chunk:answer to q2",
    "tool_call:look up q2:completed",
    "agent_message_chunk:q2 done",
    "usage_update",
]


def test_load_replays_grouped_by_default_and_turn_by_turn_in_conversation_order() -> None:
    async def body() -> None:
        runner = Runner(MemoryStore(), Turns())
        session_id = await record(runner)
        grouped = await load(runner, session_id, runner.options())
        assert [describe(u) for u in grouped] == GROUPED
        assert [describe(u) for u in await load(runner, session_id, runner.options().replay_order("grouped"))] == GROUPED
        conversation = await load(runner, session_id, runner.options().replay_order("conversation"))
        assert [describe(u) for u in conversation] == CONVERSATION
        # The same updates, message ids included: only their order differs.
        assert sorted(map(json.dumps, grouped)) == sorted(map(json.dumps, conversation))

    run(body)


@pytest.mark.parametrize("order", ["conversation", "grouped"])
def test_the_keyword_argument_sets_the_order_the_builder_does(order: str) -> None:
    host = EchoHost()
    assert f"replay_order: {order.capitalize()}" in repr(Options(host, replay_order=order))  # type: ignore[arg-type]
    assert repr(Options(host, replay_order=order)) == repr(Options(host).replay_order(order))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["Conversation", "chronological", ""])
def test_a_wrong_order_is_refused_when_the_options_are_made(bad: str) -> None:
    expected = f'replay_order: unknown replay order "{bad}": expected "grouped" or "conversation"'
    with pytest.raises(ValueError) as raised:
        Options(EchoHost(), replay_order=bad)  # type: ignore[arg-type]
    assert str(raised.value) == expected
    with pytest.raises(ValueError) as raised:
        Runner(MemoryStore(), Turns()).options().replay_order(bad)  # type: ignore[arg-type]
    assert str(raised.value) == expected
    with pytest.raises(TypeError):
        Options(EchoHost(), replay_order=1)  # type: ignore[arg-type]
