"""Streams that survive a cut: every demo served with ``--listen``, driven over Streamable HTTP by a
plain HTTP client (``httpx``), the way a client that resumes does it.

- Every ``session/update`` carries its stream cursor in ``params._meta["acp/cursor"]``, and it is
  the SSE event's id; every other event has an id too, and no id repeats.
- A session stream cut after ``k`` events (the client's TCP connection closed, with whatever it had
  not read) and reopened with ``Last-Event-ID`` set to the last id it saw gives exactly the rest of
  the turn: the chunks equal an uncut run's, the prompt's answer comes once, no update twice. Each
  demo is cut at ``CUTS`` different points of a turn still streaming.
- A ``Last-Event-ID`` the stream does not hold is refused with HTTP 409 naming it, and the open stream
  goes on serving.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import httpx
import pytest

from conformance import remote
from conformance.agents import Agent
from conftest import AGENTS, usable

CUTS = 50
"""How many cut points each demo's stream is cut at (one turn per cut)."""

TURN = os.environ.get("ACP_RESUME_TURN", "drip 12 5")
"""The turn each cut interrupts: twelve chunks, one every 5 ms, so a cut finds it still streaming."""

TIMEOUT = 20.0


class Stream:
    """One SSE response of a connection's session stream."""

    def __init__(self, client: httpx.AsyncClient, response: httpx.Response) -> None:
        self._client = client
        self._response = response
        self._lines = response.aiter_lines()
        self.last_id: Optional[str] = None

    @classmethod
    async def open(
        cls, url: str, connection: str, session: Optional[str], last_event_id: Optional[str] = None
    ) -> "Stream | Tuple[int, str]":
        """The stream (the connection's, or ``session``'s), or the refusal's status and body."""
        client = httpx.AsyncClient(timeout=TIMEOUT)
        headers = {"accept": "text/event-stream", "acp-connection-id": connection}
        if session is not None:
            headers["acp-session-id"] = session
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        response = await client.send(client.build_request("GET", url, headers=headers), stream=True)
        if response.status_code != 200:
            body = (await response.aread()).decode()
            await response.aclose()
            await client.aclose()
            return response.status_code, body
        return cls(client, response)

    async def next(self) -> Tuple[str, Dict[str, Any]]:
        """The next event: its id and its message (comments skipped)."""
        event_id: Optional[str] = None
        data: List[str] = []
        while True:
            line = await asyncio.wait_for(self._lines.__anext__(), TIMEOUT)
            if line == "":
                if data:
                    assert event_id is not None, f"an event without an id: {data}"
                    self.last_id = event_id
                    return event_id, json.loads("\n".join(data))
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event_id = value
            elif field == "data":
                data.append(value)

    async def until_answer(self, request_id: int) -> List[Tuple[str, Dict[str, Any]]]:
        seen = []
        while True:
            event = await self.next()
            seen.append(event)
            if event[1].get("id") == request_id and "method" not in event[1]:
                return seen

    async def cut(self) -> None:
        """Closes the client's connection, unread bytes and all."""
        await self._response.aclose()
        await self._client.aclose()


class Connection:
    """An initialized Streamable HTTP connection with one session."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.AsyncClient(timeout=TIMEOUT)
        self.id = ""
        self.session = ""

    async def start(self) -> None:
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        answer = await self.client.post(self.url, json=initialize, headers={"accept": "application/json, text/event-stream"})
        assert answer.status_code == 200, answer.text
        self.id = answer.headers["acp-connection-id"]
        events = await Stream.open(self.url, self.id, None)
        assert isinstance(events, Stream)
        await self.post({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": os.getcwd(), "mcpServers": []}}, None)
        # The connection's stream (no session header): its answer comes there.
        self.session = (await events.until_answer(1))[-1][1]["result"]["sessionId"]
        await events.cut()

    async def post(self, message: Dict[str, Any], session: Optional[str]) -> None:
        headers = {"acp-connection-id": self.id, "accept": "application/json, text/event-stream"}
        if session:
            headers["acp-session-id"] = session
        answer = await self.client.post(self.url, json=message, headers=headers)
        assert answer.status_code == 202, answer.text

    async def prompt(self, request_id: int, text: str) -> None:
        await self.post(
            {"jsonrpc": "2.0", "id": request_id, "method": "session/prompt",
             "params": {"sessionId": self.session, "prompt": [{"type": "text", "text": text}]}},
            self.session,
        )

    async def close(self) -> None:
        await self.client.delete(self.url, headers={"acp-connection-id": self.id})
        await self.client.aclose()


def chunks(events: List[Tuple[str, Dict[str, Any]]]) -> List[str]:
    return [
        m["params"]["update"]["content"]["text"]
        for _, m in events
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]


def check_ids(events: List[Tuple[str, Dict[str, Any]]], where: str) -> None:
    """Every id is unique; an update's id is its cursor, and every update of a turn has one (an
    update that is no event of the session, such as the command list, has none)."""
    ids = [event_id for event_id, _ in events]
    assert len(set(ids)) == len(ids), f"{where}: an id repeats: {ids}"
    for event_id, message in events:
        if message.get("method") != "session/update":
            continue
        cursor = message["params"].get("_meta", {}).get("acp/cursor")
        if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk":
            assert cursor is not None, f"{where}: a chunk without a cursor: {message}"
        if cursor is not None:
            assert cursor == event_id, f"{where}: an update's id is not its cursor: {event_id} {message}"


async def serve(agent: Agent, tmp: Path) -> remote.RemoteAgent:
    assert agent.command is not None
    return await remote.listen(
        agent.name, (*agent.command, "--store", ":memory:"), dict(os.environ), tmp,
        tmp / "stderr.txt", tmp / "stdout.txt", TIMEOUT,
    )


@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: a.name)
def test_a_stream_cut_anywhere_and_reopened_after_its_last_event_misses_nothing(agent: Agent, tmp_path: Path) -> None:
    usable(agent)

    async def run() -> None:
        served = await serve(agent, tmp_path)
        problems: List[str] = []
        try:
            connection = Connection(served.url)
            await connection.start()
            stream = await Stream.open(served.url, connection.id, connection.session)
            assert isinstance(stream, Stream)
            await connection.prompt(2, TURN)
            uncut = await stream.until_answer(2)
            check_ids(uncut, "uncut")
            expected = chunks(uncut)
            assert len(expected) == 12, expected
            for cut in range(1, CUTS + 1):
                request_id = 100 + cut
                await connection.prompt(request_id, TURN)
                # Cut after 1..12 events, then again over the range with the turn further along.
                received = [await stream.next() for _ in range(1 + (cut - 1) % 12)]
                last_seen = stream.last_id
                assert last_seen is not None
                await stream.cut()
                if cut % 2 == 0:
                    # Reopened a little later: the turn went on streaming meanwhile.
                    await asyncio.sleep(0.02)
                reopened = await Stream.open(served.url, connection.id, connection.session, last_seen)
                assert isinstance(reopened, Stream), f"cut {cut} after {last_seen}: {reopened}"
                stream = reopened
                received += await stream.until_answer(request_id)
                where = f"{agent.name} cut {cut} after {last_seen}"
                check_ids(received, where)
                assert chunks(received) == expected, where
                answers = [m for _, m in received if m.get("id") == request_id]
                assert len(answers) == 1 and answers[0]["result"]["stopReason"] == "end_turn", where

            # An id the stream never sent: 409 naming it; the open stream goes on.
            refused = await Stream.open(served.url, connection.id, connection.session, "123456789")
            assert refused == (409, "Unknown Last-Event-ID: 123456789"), refused
            await connection.prompt(999, "hello there")
            assert "".join(chunks(await stream.until_answer(999))).split() == ["hello", "there"]
            await stream.cut()
            await connection.close()
        finally:
            code = await served.stop(problems, 0)
        assert code == 0 and not problems, (code, problems)

    asyncio.run(run())


@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: a.name)
def test_a_permission_request_lost_in_a_cut_comes_again_and_its_answer_ends_the_turn(agent: Agent, tmp_path: Path) -> None:
    """The stream is cut right after the tool call's announcement, with the permission request on
    its way: the reopened stream brings the request, and the client's answer ends the turn."""
    usable(agent)

    async def run() -> None:
        served = await serve(agent, tmp_path)
        problems: List[str] = []
        try:
            connection = Connection(served.url)
            await connection.start()
            stream = await Stream.open(served.url, connection.id, connection.session)
            assert isinstance(stream, Stream)
            await connection.prompt(2, "tool grep")
            while True:
                _, message = await stream.next()
                update = message.get("params", {}).get("update", {})
                if update.get("sessionUpdate") == "tool_call":
                    break
            last_seen = stream.last_id
            await stream.cut()
            reopened = await Stream.open(served.url, connection.id, connection.session, last_seen)
            assert isinstance(reopened, Stream), reopened
            stream = reopened
            _, asked = await stream.next()
            assert asked.get("method") == "session/request_permission", asked
            answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}
            await connection.post(answer, connection.session)
            rest = await stream.until_answer(2)
            assert rest[-1][1]["result"]["stopReason"] == "end_turn", rest[-1]
            assert "grep: done" in chunks(rest), rest
            check_ids(rest, agent.name)
            await stream.cut()
            await connection.close()
        finally:
            code = await served.stop(problems, 0)
        assert code == 0 and not problems, (code, problems)

    asyncio.run(run())
