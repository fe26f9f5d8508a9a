"""docs/first-agent-python.md: both of its programs run as agents under the official ACP Python
client, doing what the guide says the client sees."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, AsyncIterator, List, Tuple

import contextlib
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

from conftest import ROOT, RecordingClient, SchemaObserver, run

GUIDE = ROOT / "docs" / "first-agent-python.md"


def snippets(language: str) -> List[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", GUIDE.read_text(), re.M | re.S)


@contextlib.asynccontextmanager
async def agent(program: str, client: RecordingClient) -> AsyncIterator[Tuple[Any, str]]:
    """The program started as an agent in a directory of its own; the connection, initialized,
    and a session whose cwd holds two files."""
    with tempfile.TemporaryDirectory() as home:
        script = Path(home) / "agent.py"
        script.write_text(program)
        workspace = Path(home) / "workspace"
        workspace.mkdir()
        for name in ("b.txt", "a.txt"):
            (workspace / name).write_text(name)
        observer = SchemaObserver()
        async with spawn_agent_process(client, sys.executable, str(script), cwd=home, observers=[observer]) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            yield conn, session
        assert not observer.violations, observer.violations


def tool_statuses(client: RecordingClient) -> List[str]:
    return [u.status for _, u in client.updates if u.session_update == "tool_call_update" and u.status]


def test_the_guide_has_two_programs_and_a_zed_entry() -> None:
    assert len(snippets("python")) == 2
    (zed,) = [json.loads(s) for s in snippets("json")]
    assert zed["agent_servers"]["files"]["args"][0].endswith("files_agent.py")


def test_list_allowed_runs_the_tool_and_streams_the_names() -> None:
    async def body() -> None:
        client = RecordingClient()
        async with agent(snippets("python")[0], client) as (conn, session):
            reply = await conn.prompt(session_id=session, prompt=[text_block("list")])
            assert reply.stop_reason == "end_turn"
            (options, _), = client.permission_requests
            assert [o.kind for o in options] == ["allow_once", "reject_once"]
            assert tool_statuses(client) == ["completed"]
            assert client.chunks() == ["a.txt\n", "b.txt\n"]

    run(body)


def test_list_rejected_fails_the_tool() -> None:
    async def body() -> None:
        client = RecordingClient()
        client.permission_answer = "reject_once"
        async with agent(snippets("python")[0], client) as (conn, session):
            reply = await conn.prompt(session_id=session, prompt=[text_block("list")])
            assert reply.stop_reason == "end_turn"
            assert tool_statuses(client) == ["failed"]
            assert client.chunks() == ["I was not allowed to look."]

    run(body)


def test_count_streams_and_stops_when_cancelled() -> None:
    async def body() -> None:
        client = RecordingClient()
        async with agent(snippets("python")[0], client) as (conn, session):
            reply = await conn.prompt(session_id=session, prompt=[text_block("count 5")])
            assert reply.stop_reason == "end_turn" and "".join(client.chunks()) == "1 2 3 4 5 "
            client.clear()
            prompt = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("count 100000")]))
            while not client.chunks():
                await asyncio.sleep(0.01)
            await conn.cancel(session_id=session)
            reply = await asyncio.wait_for(prompt, 10)
            assert reply.stop_reason == "cancelled"
            assert len(client.chunks()) < 100000

    run(body)


def test_recap_tells_the_earlier_turns() -> None:
    async def body() -> None:
        client = RecordingClient()
        async with agent(snippets("python")[0], client) as (conn, session):
            await conn.prompt(session_id=session, prompt=[text_block("list")])
            client.clear()
            reply = await conn.prompt(session_id=session, prompt=[text_block("recap")])
            assert reply.stop_reason == "end_turn"
            recap = "".join(client.chunks())
            assert recap.startswith("you: list\nme: a.txt\nb.txt\n\ntool: List "), recap
            assert recap.endswith(": a.txt\nb.txt\n"), recap  # the call's title names the directory

    run(body)


def test_the_custom_host_echoes_word_by_word() -> None:
    async def body() -> None:
        client = RecordingClient()
        async with agent(snippets("python")[1], client) as (conn, session):
            reply = await conn.prompt(session_id=session, prompt=[text_block("hello brave world")])
            assert reply.stop_reason == "end_turn"
            assert client.chunks() == ["hello ", "brave ", "world "]

    run(body)
