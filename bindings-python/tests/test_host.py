"""The host interfaces from Python, served in-process over a pair of asyncio streams
(``Agent.serve``) and driven by the official ACP Python client: errors raised by host methods,
host coroutines that never return (cancelled on ``session/cancel`` and on close), and sync
methods where async is required."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, List

import pytest
from acp import RequestError

import acp_facade
from acp_facade import (
    Agent,
    ContentBlock,
    GateResponse,
    InvalidParams,
    LiveSession,
    MemoryStore,
    Options,
    Runner,
    SessionHost,
    Setup,
    Turn,
    TurnRunner,
)
from conftest import ROOT, RecordingClient, connect, run

sys.path.insert(0, str(ROOT / "examples" / "python"))
from host_example import EchoHost, EchoSession  # noqa: E402


class RaisingHost(SessionHost):
    """Fails `session/new` by the cwd it is given."""

    async def new_session(self, setup: Setup) -> LiveSession:
        if setup.cwd == "/acp-error":
            raise InvalidParams("no such project", {"field": "cwd"})
        if setup.cwd == "/custom-code":
            raise acp_facade.AcpError(-32042, "a custom failure")
        if setup.cwd == "/sync-session":
            return SyncSession("s-1")
        raise ValueError("boom")


class SyncSession(LiveSession):
    def submit(self, prompt: List[ContentBlock]) -> str:  # type: ignore[override]
        return "c1"


def test_host_errors_keep_their_code_or_answer_internal_error() -> None:
    async def body() -> None:
        async with connect(Agent(Options(RaisingHost()))) as conn:
            with pytest.raises(RequestError) as info:
                await conn.new_session(cwd="/acp-error", mcp_servers=[])
            assert info.value.code == -32602
            assert "no such project" in str(info.value)
            assert info.value.data == {"field": "cwd"}
            with pytest.raises(RequestError) as info:
                await conn.new_session(cwd="/custom-code", mcp_servers=[])
            assert info.value.code == -32042
            with pytest.raises(RequestError) as info:
                await conn.new_session(cwd="/plain", mcp_servers=[])
            assert info.value.code == -32603
            assert "boom" in str(info.value)
            # A live session with a sync method is refused with a clear message, and the agent lives on.
            with pytest.raises(RequestError) as info:
                await conn.new_session(cwd="/sync-session", mcp_servers=[])
            assert info.value.code == -32603
            assert "async def" in str(info.value)
            with pytest.raises(RequestError):
                await conn.new_session(cwd="/plain", mcp_servers=[])

    run(body)


def test_sync_methods_are_a_type_error_at_startup() -> None:
    class SyncHost:
        def new_session(self, setup: Setup) -> LiveSession:
            return EchoSession("x")

    class SyncLoader(EchoHost):
        def load_session(self, session_id: str, setup: Setup) -> Any:
            return None

    class SyncRunner:
        def run_turn(self, turn: Turn) -> None:
            return None

    class SyncCompact(TurnRunner):
        async def run_turn(self, turn: Turn) -> None:
            return None

        def compact(self, session_id: str) -> None:
            return None

    with pytest.raises(TypeError, match="new_session must be an `async def`"):
        Options(SyncHost())
    with pytest.raises(TypeError, match="load_session must be an `async def`"):
        Options(SyncLoader())
    with pytest.raises(TypeError, match="run_turn must be an `async def`"):
        Runner(MemoryStore(), SyncRunner())
    with pytest.raises(TypeError, match="compact must be an `async def`"):
        Runner(MemoryStore(), SyncCompact())
    with pytest.raises(TypeError, match="no `new_session`"):
        Options(object())


def test_optional_methods_switch_capabilities_on() -> None:
    class FullHost(EchoHost):
        async def load_session(self, session_id: str, setup: Setup) -> Any:
            raise acp_facade.ResourceNotFound(f"session not found: {session_id}")

        async def list_sessions(self) -> List[acp_facade.SessionCatalogEntry]:
            return [acp_facade.SessionCatalogEntry("stored-1", cwd="/tmp", title="old one")]

    async def body() -> None:
        for host, load, listing in ((EchoHost(), False, False), (FullHost(), True, True)):
            async with connect(Agent(Options(host))) as conn:
                caps = conn.init_response.agent_capabilities  # type: ignore[attr-defined]
                assert bool(caps.load_session) is load
                assert (caps.session_capabilities.list is not None) is listing
                assert caps.session_capabilities.resume is None
                if listing:
                    page = await conn.list_sessions()
                    assert [(s.session_id, s.title) for s in page.sessions] == [("stored-1", "old one")]
                    with pytest.raises(RequestError) as info:
                        await conn.load_session(cwd="/tmp", session_id="stored-2", mcp_servers=[])
                    assert info.value.code == -32002

    run(body)


def test_new_session_receives_the_setup() -> None:
    setups: List[Setup] = []

    class Host(SessionHost):
        async def new_session(self, setup: Setup) -> LiveSession:
            setups.append(setup)
            return EchoSession("setup-1")

    async def body() -> None:
        server = {"name": "fs", "command": "/bin/mcp-fs", "args": ["--ro"], "env": []}
        async with connect(Agent(Options(Host()))) as conn:
            await conn.new_session(cwd="/nonexistent/acp-facade", mcp_servers=[server])  # type: ignore[list-item]
        assert setups == [Setup("/nonexistent/acp-facade", [], [acp_facade.McpServerStdio("fs", "/bin/mcp-fs", ["--ro"])])]

    run(body)


def test_echo_host_over_streams() -> None:
    async def body() -> None:
        client = RecordingClient()
        async with connect(Agent(Options(EchoHost())), client) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi there"}])  # type: ignore[list-item]
            await asyncio.sleep(0.05)
            assert response.stop_reason == "end_turn"
            assert client.chunks() == ["hi there"]

    run(body)


def test_agent_name_and_version_are_keyword_arguments_each_defaulting_on_its_own() -> None:
    async def body() -> None:
        async with connect(Agent(Options(EchoHost(), agent_name="echo"))) as conn:
            info = conn.init_response.agent_info  # type: ignore[attr-defined]
            assert (info.name, info.version) == ("echo", acp_facade.__version__)
        options = Options(EchoHost(), agent_name="echo", agent_version="2.0.0").agent_info("other", "3.0.0")
        async with connect(Agent(options)) as conn:
            info = conn.init_response.agent_info  # type: ignore[attr-defined]
            assert (info.name, info.version) == ("other", "3.0.0")

    run(body)


class Forever(TurnRunner):
    """A turn runner whose turns never return by themselves."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = 0

    async def run_turn(self, turn: Turn) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def test_run_turn_that_never_returns_is_cancelled_on_cancel_and_close() -> None:
    async def body() -> None:
        turns = Forever()
        runner = Runner(MemoryStore(), turns)
        async with connect(runner.agent()) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "x"}]))  # type: ignore[list-item]
            await asyncio.wait_for(turns.started.wait(), 5)
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(prompt, 5)).stop_reason == "cancelled"
            assert time.monotonic() - started < 2
            assert turns.cancelled == 1

            turns.started.clear()
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "y"}]))  # type: ignore[list-item]
            await asyncio.wait_for(turns.started.wait(), 5)
            await asyncio.wait_for(conn.close_session(session_id=sid), 5)
            assert (await asyncio.wait_for(prompt, 5)).stop_reason == "cancelled"
            assert turns.cancelled == 2

    run(body)


class StuckSession(EchoSession):
    """A session whose shutdown never returns."""

    shutdown_cancelled = 0

    async def shutdown(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            StuckSession.shutdown_cancelled += 1
            raise


class StuckHost(SessionHost):
    async def new_session(self, setup: Setup) -> LiveSession:
        return StuckSession("stuck-1")


def test_shutdown_that_never_returns_is_cancelled_after_the_close_grace() -> None:
    async def body() -> None:
        async with connect(Agent(Options(StuckHost(), close_grace=0.3))) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            started = time.monotonic()
            await asyncio.wait_for(conn.close_session(session_id=sid), 5)
            assert time.monotonic() - started < 3
            await asyncio.sleep(0.1)
            assert StuckSession.shutdown_cancelled == 1

    run(body)


class GateSession(LiveSession):
    async def submit(self, prompt: List[ContentBlock]) -> str:
        raise acp_facade.InvalidRequest("busy")

    async def interrupt(self) -> None:
        return None

    async def respond_gate(self, gate_id: str, response: GateResponse) -> None:
        return None


def test_submit_error_answers_the_prompt() -> None:
    class Host(SessionHost):
        async def new_session(self, setup: Setup) -> LiveSession:
            return GateSession("g-1")

    async def body() -> None:
        async with connect(Agent(Options(Host()))) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            with pytest.raises(RequestError) as info:
                await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "x"}])  # type: ignore[list-item]
            assert info.value.code == -32600

    run(body)
