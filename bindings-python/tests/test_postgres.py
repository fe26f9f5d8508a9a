"""The PostgreSQL store from Python (``bindings-python/src/runner.rs``, ``PostgresStore``): the
constructor's errors, and Python demo agents sharing one database as processes of a fleet would,
driven by the official ACP Python client — a session live in one is refused elsewhere (-32600)
until it is closed there, a list cursor pages in another process, and the demo exits with one
clear line when the database cannot be reached."""

from __future__ import annotations

import subprocess
import sys

import pytest
from acp import RequestError

from acp_facade import MemoryStore, PostgresStore, Runner
from conftest import DEMO, demo, postgres_url, run

UNREACHABLE = "postgres://acp:s3cret@/postgres?host=/nonexistent/acp-facade"


class Echo:
    async def run_turn(self, turn):  # type: ignore[no-untyped-def]
        return None


def test_an_unreachable_database_raises_connection_error_without_the_password() -> None:
    with pytest.raises(ConnectionError) as raised:
        PostgresStore(UNREACHABLE)
    assert isinstance(raised.value, OSError)
    message = str(raised.value)
    assert "cannot connect to PostgreSQL (host=/nonexistent/acp-facade" in message
    assert "s3cret" not in message
    with pytest.raises(OSError, match="invalid PostgreSQL URL"):
        PostgresStore("mysql://nope")


def test_the_demo_exits_1_with_one_line_when_the_database_is_unreachable() -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), "--store", UNREACHABLE], input="", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot open the session store" in lines[0], done.stderr
    assert "s3cret" not in done.stderr


def test_a_runner_over_it_and_close() -> None:
    store = PostgresStore(postgres_url())
    Runner(store, Echo())
    assert not isinstance(store, MemoryStore)
    store.close()


def test_two_demo_processes_one_live_owner_per_session_and_shared_cursors() -> None:
    url = postgres_url()

    async def body() -> None:
        async with demo("--store", url, "--page-size", "2") as a, demo("--store", url, "--page-size", "2") as b:
            sid = await a.new_session()
            assert (await a.prompt(sid, "hello fleet")).stop_reason == "end_turn"
            with pytest.raises(RequestError) as refused:
                await b.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
            assert refused.value.code == -32600
            assert "live in another process" in str(refused.value)
            for _ in range(3):
                await a.new_session()
            first = await a.conn.list_sessions()
            assert first.next_cursor
            in_a = await a.conn.list_sessions(cursor=first.next_cursor)
            in_b = await b.conn.list_sessions(cursor=first.next_cursor)
            assert [s.session_id for s in in_b.sessions] == [s.session_id for s in in_a.sessions]

            await a.conn.close_session(session_id=sid)
            await b.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
            assert b.client.chunks("user_message_chunk", sid) == ["hello fleet"]
            assert (await b.prompt(sid, "again")).stop_reason == "end_turn"

    run(body)
