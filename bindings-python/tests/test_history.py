"""``Turn.history`` from Python: a later turn reads the session's earlier turns as typed entries
(prompts, replies, thoughts, tool calls with their final status), bounded by ``limit``; a session
loaded or resumed by another agent process over the same store (SQLite, and PostgreSQL when the
test server is configured) reads the same conversation; ``/compact`` leaves its summary in place
of what it compacted.

Run as a script (``test_history.py --store PATH|postgres://...``) this file is the agent those
tests start: a :class:`Recall` runner over stdio."""

from __future__ import annotations

import sys
from typing import Any, List

from acp_facade import (
    AssistantEntry,
    HistoryEntry,
    MemoryStore,
    PostgresStore,
    Runner,
    SqliteStore,
    StopReason,
    SummaryEntry,
    TextContent,
    ThoughtEntry,
    ToolCallEntry,
    ToolCallStatus,
    ToolKind,
    Turn,
    TurnRunner,
    UserEntry,
    text_block,
)


def line(entry: HistoryEntry) -> str:
    """One entry as one line: ``user:T``, ``assistant:T``, ``thought:T``,
    ``tool:TITLE:STATUS:TEXT``, ``summary:T`` (newlines escaped)."""
    if isinstance(entry, ToolCallEntry):
        text = f"tool:{entry.title}:{entry.status.value if isinstance(entry.status, ToolCallStatus) else entry.status}:{entry.text}"
    else:
        text = f"{entry.type}:{getattr(entry, 'text')}"
    return text.replace("\n", "\\n")


class Recall(TurnRunner):
    """``recall N`` streams ``turn.history(limit=N)``, one :func:`line` per entry (and keeps the
    entries in ``seen``); ``think T``, ``tool``, ``toolfail``, ``dangling`` make entries of each
    kind; anything else is echoed. ``/compact`` answers ``summary N``."""

    def __init__(self) -> None:
        self.compactions = 0
        self.seen: List[List[HistoryEntry]] = []

    async def run_turn(self, turn: Turn) -> StopReason:
        text = turn.prompt_text()
        verb, _, rest = text.partition(" ")
        if verb == "recall":
            entries = await turn.history(limit=int(rest))
            self.seen.append(entries)
            for entry in entries:
                await turn.text(line(entry) + "\n")
        elif verb == "think":
            await turn.thought(rest)
            await turn.text("ok")
        elif verb == "tool":
            call = await turn.start_tool_call("Read file", ToolKind.READ, {"path": "/tmp/a"})
            await turn.complete_tool_call(call, [text_block("contents")])
            await turn.text("read it")
        elif verb == "toolfail":
            call = await turn.start_tool_call("Run rm", ToolKind.EXECUTE, {"cmd": "rm"})
            await turn.fail_tool_call(call, [text_block("refused")])
        elif verb == "dangling":
            await turn.start_tool_call("Wait")
        elif verb == "badlimit":
            try:
                await turn.history(limit=-1)
            except ValueError as e:
                await turn.text(str(e))
        else:
            await turn.text(text)
        return StopReason.END_TURN

    async def compact(self, session_id: str) -> str:
        self.compactions += 1
        return f"summary {self.compactions}"


CONVERSATION = ["hello", "think deeply", "tool", "toolfail", "dangling"]
"""Prompts that make every kind of entry."""

CONVERSED = [
    "user:hello",
    "assistant:hello",
    "user:think deeply",
    "thought:deeply",
    "assistant:ok",
    "user:tool",
    "assistant:read it",
    "tool:Read file:completed:contents",
    "user:toolfail",
    "tool:Run rm:failed:refused",
    "user:dangling",
    "tool:Wait:pending:",
]
"""What ``recall`` streams after :data:`CONVERSATION`."""


if __name__ == "__main__":
    where = sys.argv[sys.argv.index("--store") + 1]
    store = PostgresStore(where) if where.startswith("postgres") else SqliteStore(where)
    Runner(store, Recall()).agent().run_stdio()
    sys.exit(0)


import pytest  # noqa: E402  (the tests only: the agent above needs none of this)

from conftest import Demo, connect, demo, postgres_url, run  # noqa: E402


async def say(conn: Any, client: Any, sid: str, text: str) -> str:
    """Prompts ``sid`` with ``text``; the text the turn streamed."""
    client.clear()
    response = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": text}])
    assert response.stop_reason == "end_turn", response
    return "".join(client.chunks("agent_message_chunk", sid))


async def recall(d: Demo, sid: str, limit: int = 50) -> List[str]:
    return (await say(d.conn, d.client, sid, f"recall {limit}")).splitlines()


def test_a_turn_reads_typed_entries_of_the_turns_before_it_bounded_by_limit() -> None:
    from conftest import RecordingClient

    turns = Recall()
    client = RecordingClient()

    async def body() -> None:
        async with connect(Runner(MemoryStore(), turns).agent(), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            assert await say(conn, client, sid, "recall 50") == "", "a new session has no history"
            for prompt in CONVERSATION:
                await say(conn, client, sid, prompt)
            reply = await say(conn, client, sid, "recall 50")
            assert reply.splitlines() == ["user:recall 50", *CONVERSED], "its own prompt is not in it"
            last = await say(conn, client, sid, "recall 3")
            assert last.splitlines() == ["tool:Wait:pending:", "user:recall 50", "assistant:" + reply.replace("\n", "\\n")]
            assert await say(conn, client, sid, "recall 0") == ""
            assert "history limit must be an int >= 0, not -1" in await say(conn, client, sid, "badlimit")

    run(body)
    entries = turns.seen[1]
    assert entries[0] == UserEntry("recall 50", [TextContent("recall 50")])
    assert entries[1:3] == [UserEntry("hello", [TextContent("hello")]), AssistantEntry("hello")]
    assert entries[4] == ThoughtEntry("deeply") and entries[4] != AssistantEntry("deeply")
    read = entries[8]
    assert isinstance(read, ToolCallEntry) and read.type == "tool_call"
    assert (read.title, read.name, read.kind, read.status) == ("Read file", None, ToolKind.READ, ToolCallStatus.COMPLETED)
    assert (read.input, read.output, read.content, read.text) == ({"path": "/tmp/a"}, None, [TextContent("contents")], "contents")
    assert entries[10].status is ToolCallStatus.FAILED and entries[12].status is ToolCallStatus.PENDING
    assert entries[12].input is None
    assert repr(AssistantEntry("hi")) == "AssistantEntry(text='hi')"
    assert [e.type for e in (UserEntry("", []), SummaryEntry("s"), ThoughtEntry("t"))] == ["user", "summary", "thought"]
    with pytest.raises(TypeError):
        hash(AssistantEntry("hi"))


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_another_process_reads_the_same_history_after_load_resume_and_compaction(database: str, tmp_path: Any) -> None:
    store = str(tmp_path / "sessions.sqlite") if database == "sqlite" else postgres_url()
    agent = ("--store", store)
    here = __import__("pathlib").Path(__file__)

    async def body() -> None:
        async with demo(*agent, script=here) as first:
            sid = await first.new_session()
            for prompt in CONVERSATION:
                await first.prompt(sid, prompt)
        async with demo(*agent, script=here) as second:
            await second.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
            assert await recall(second, sid) == CONVERSED, "after load, in another process"
            await second.prompt(sid, "/compact")
            assert await recall(second, sid) == ["summary:summary 1"], "compacted"
            await second.prompt(sid, "more")
        async with demo(*agent, script=here) as third:
            await third.conn.resume_session(cwd="/tmp", session_id=sid, mcp_servers=[])
            expected = ["summary:summary 1", "user:recall 50", "assistant:summary:summary 1\\n", "user:more", "assistant:more"]
            assert await recall(third, sid) == expected, "after resume: the summary, then what followed"
            assert await recall(third, sid, 2) == ["user:recall 50", "assistant:" + "\\n".join(expected) + "\\n"]

    run(body)
