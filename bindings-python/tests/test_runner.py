"""The Python demo agent (the turn runner over SQLite), driven by the official ACP Python client.

Mirrors the core's runner module: every prompt of the demo script, cancellation, close, delete,
list with pagination, load and resume across a restart, config options and modes, `/compact`."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from acp import RequestError

from conftest import Demo, demo, run


async def _settle(d: Demo) -> None:
    # Updates are delivered before the prompt's response; give the client's router a tick.
    await asyncio.sleep(0.05)


def test_echo_word_by_word_with_usage() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            response = await d.prompt(sid, "  hello big   world ")
            await _settle(d)
            assert response.stop_reason == "end_turn"
            assert d.client.chunks() == ["hello ", "big ", "world"]
            usage = [u for _, u in d.client.updates if u.session_update == "usage_update"]
            assert len(usage) == 1
            # UTF-8 bytes of the trimmed prompt plus those of the reply.
            assert usage[0].used == len("hello big   world") + len("hello big world")
            assert usage[0].size == 200000
            titles = [u.title for _, u in d.client.updates if u.session_update == "session_info_update"]
            assert titles == ["hello big   world"]

    run(body)


def test_stream_500_in_order() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            response = await d.prompt(sid, "stream 500")
            await _settle(d)
            assert response.stop_reason == "end_turn"
            assert d.client.chunks() == [f"t{i} " for i in range(1, 501)]

    run(body)


def test_think() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            await d.prompt(sid, "think about it")
            await _settle(d)
            assert d.client.chunks("agent_thought_chunk") == ["about it"]
            assert d.client.chunks() == ["done thinking"]

    run(body)


@pytest.mark.parametrize(
    ("answer", "status", "text"),
    [("allow_once", "completed", "ls: done"), ("allow_always", "completed", "ls: done"), ("reject_once", "failed", "ls: denied")],
)
def test_tool_allow_and_reject(answer: str, status: str, text: str) -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            d.client.permission_answer = answer
            sid = await d.new_session()
            response = await d.prompt(sid, "tool ls")
            await _settle(d)
            assert response.stop_reason == "end_turn"
            options, tool_call = d.client.permission_requests[0]
            assert [o.option_id for o in options] == ["allow_once", "allow_always", "reject_once"]
            calls = [u for _, u in d.client.updates if u.session_update == "tool_call"]
            assert calls[0].status in (None, "pending") and calls[0].title == "ls" and calls[0].kind == "execute"
            updates = [u for _, u in d.client.updates if u.session_update == "tool_call_update" and u.status]
            assert updates[-1].status == status
            assert d.client.chunks() == [text]

    run(body)


def test_tool_permission_cancelled_by_client() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            d.client.permission_answer = None
            sid = await d.new_session()
            response = await d.prompt(sid, "tool rm")
            # docs/DEMO.md: the client answers `cancelled`: the turn ends `cancelled` (no reply text).
            assert response.stop_reason == "cancelled"
            await _settle(d)
            assert d.client.chunks() == []

    run(body)


def test_cancel_sleep_ends_cancelled_at_once() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            started = time.monotonic()
            prompt = asyncio.ensure_future(d.prompt(sid, "sleep 30000"))
            await asyncio.sleep(0.3)
            await d.conn.cancel(session_id=sid)
            response = await asyncio.wait_for(prompt, 10)
            assert response.stop_reason == "cancelled"
            assert time.monotonic() - started < 5
            # The session still works.
            assert (await d.prompt(sid, "sleep 1")).stop_reason == "end_turn"

    run(body)


def test_cancel_mid_stream() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            prompt = asyncio.ensure_future(d.prompt(sid, "stream 100000"))
            await asyncio.sleep(0.2)
            await d.conn.cancel(session_id=sid)
            response = await asyncio.wait_for(prompt, 30)
            assert response.stop_reason == "cancelled"
            chunks = d.client.chunks()
            assert chunks == [f"t{i} " for i in range(1, len(chunks) + 1)]

    run(body)


def test_ask_waits_until_cancel() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            prompt = asyncio.ensure_future(d.prompt(sid, "ask what now?"))
            await asyncio.sleep(0.3)
            assert not prompt.done()
            await d.conn.cancel(session_id=sid)
            response = await asyncio.wait_for(prompt, 10)
            assert response.stop_reason == "cancelled"

    run(body)


def test_fail_answers_internal_error() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            with pytest.raises(RequestError) as info:
                await d.prompt(sid, "fail")
            assert info.value.code == -32603
            assert "the demo turn failed, as asked" in str(info.value)
            assert (await d.prompt(sid, "ok")).stop_reason == "end_turn"

    run(body)


def test_close_cancels_the_running_turn() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            prompt = asyncio.ensure_future(d.prompt(sid, "sleep 30000"))
            await asyncio.sleep(0.3)
            await asyncio.wait_for(d.conn.close_session(session_id=sid), 10)
            assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"
            with pytest.raises(RequestError):
                await d.prompt(sid, "hello")

    run(body)


def test_delete_and_list_with_pagination(tmp_path: Path) -> None:
    store = str(tmp_path / "s.sqlite")

    async def body() -> None:
        async with demo("--store", store, "--page-size", "2") as d:
            ids = []
            for i in range(5):
                sid = await d.new_session(cwd=str(tmp_path))
                await d.prompt(sid, f"session {i}")
                await d.conn.close_session(session_id=sid)
                ids.append(sid)
            seen = []
            cursor = None
            pages = 0
            while True:
                page = await d.conn.list_sessions(cursor=cursor)
                pages += 1
                assert len(page.sessions) <= 2
                seen += [s.session_id for s in page.sessions]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert pages == 3
            assert sorted(seen) == sorted(ids)
            titles = {s.title for s in (await d.conn.list_sessions()).sessions}
            assert "session 4" in titles or len(titles) == 2
            await d.request("session/delete", {"sessionId": ids[0]})
            remaining = []
            cursor = None
            while True:
                page = await d.conn.list_sessions(cursor=cursor)
                remaining += [s.session_id for s in page.sessions]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert sorted(remaining) == sorted(ids[1:])

    run(body)


def test_load_and_resume_after_restart(tmp_path: Path) -> None:
    store = str(tmp_path / "s.sqlite")

    async def body() -> None:
        async with demo("--store", store) as d:
            sid = await d.new_session(cwd=str(tmp_path))
            await d.prompt(sid, "hello there")
            other = await d.new_session(cwd=str(tmp_path))
            await d.prompt(other, "think twice")
        async with demo("--store", store) as d:
            await d.conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            await _settle(d)
            assert d.client.chunks("user_message_chunk", sid) == ["hello there"]
            assert "".join(d.client.chunks(session_id=sid)) == "hello there"
            d.client.clear()
            assert (await d.prompt(sid, "again")).stop_reason == "end_turn"
            await d.conn.resume_session(session_id=other, cwd=str(tmp_path))
            await _settle(d)
            assert d.client.kinds(other) == []
            assert (await d.prompt(other, "more")).stop_reason == "end_turn"
            await _settle(d)
            assert d.client.chunks(session_id=other) == ["more"]

    run(body)


def test_config_options_and_modes() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            response = await d.conn.new_session(cwd="/tmp", mcp_servers=[])
            sid = response.session_id
            assert response.modes is not None and response.modes.current_mode_id == "ask"
            ids = [o.root.id if hasattr(o, "root") else o.id for o in response.config_options or []]
            assert ids == ["mode", "model"]
            changed = await d.conn.set_config_option(config_id="model", session_id=sid, value="smart")
            values = {}
            for option in changed.config_options:
                o = option.root if hasattr(option, "root") else option
                values[o.id] = o.current_value
            assert values == {"mode": "ask", "model": "smart"}
            await d.conn.set_session_mode(session_id=sid, mode_id="code")
            with pytest.raises(RequestError) as info:
                await d.conn.set_config_option(config_id="model", session_id=sid, value="huge")
            assert info.value.code == -32602

    run(body)


def test_compact() -> None:
    async def body() -> None:
        async with demo("--store", ":memory:") as d:
            sid = await d.new_session()
            await d.prompt(sid, "hello")
            response = await d.prompt(sid, "/compact")
            await _settle(d)
            assert response.stop_reason == "end_turn"
            commands = [u for _, u in d.client.updates if u.session_update == "available_commands_update"]
            assert [c.name for c in commands[0].available_commands] == ["compact", "shout"]

    run(body)
