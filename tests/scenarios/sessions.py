"""Sessions: initialize, config options and modes, list and its pages, load after a restart,
resume, close, delete, cancellation, concurrency, hang-up."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from conformance.remote import HTTP, HTTP_CONNECTION
from conformance.scenario import MULTISET, scenario
from conformance.wire import CWD, Run, is_update

from .prompts import assert_usage_last


@scenario(not_over={HTTP: HTTP_CONNECTION})
async def initialize(run: Run) -> None:
    """initialize: protocolVersion 1, every session capability advertised (loadSession, list,
    resume, close, delete), the prompt content and MCP transports accepted beyond text and stdio
    (image, audio, embedded context; http), agentInfo; a newer client version is answered with 2,
    the newest the demos speak (v2 Preview), and a repeat as the first was."""
    p = await run.start(initialize=False)
    init = (await p.initialize(1)).result
    assert init["protocolVersion"] == 1, init
    caps = init["agentCapabilities"]
    assert caps["loadSession"] is True, init
    for capability in ("list", "resume", "close", "delete"):
        assert isinstance(caps["sessionCapabilities"][capability], dict), (capability, init)
    assert caps["promptCapabilities"] == {"image": True, "audio": True, "embeddedContext": True}, init
    assert caps["mcpCapabilities"] == {"http": True, "sse": False}, init
    assert init["agentInfo"]["name"] == "acp-facade-demo", init
    assert init["authMethods"] == [], init
    await p.hang_up()
    p = await run.start(initialize=False)
    # No auth methods: authenticate with an unknown method id fails.
    reply = await p.request("authenticate", {"methodId": "password"})
    assert not reply.ok, reply.raw
    await p.hang_up()
    p = await run.start(sdk=False)
    init = (await p.raw_request("initialize", {"protocolVersion": 7, "info": {"name": "c", "version": "1"}, "capabilities": {}}))["result"]
    assert init["protocolVersion"] == 2, init
    # A second initialize is answered as the first was, whatever it asks.
    assert (await p.raw_request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))["result"] == init


@scenario()
async def config_options(run: Run) -> None:
    """Config options `mode` (ask, code) and `model` (fast, smart), `mode` also served as the
    session modes: set_mode and set_config_option converge; one config_option_update with the full
    state per change; the same value again is a silent no-op; unknown ids and values are -32602."""
    p = await run.start()
    created = (await p.new_session_reply()).result
    sid = created["sessionId"]
    options = created["configOptions"]
    summary = [(o["id"], o["currentValue"], [v["value"] for v in o["options"]]) for o in options]
    assert summary == [("mode", "ask", ["ask", "code"]), ("model", "fast", ["fast", "smart"])], summary
    assert created["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in created["modes"]["availableModes"]] == ["ask", "code"]

    def current(options):
        return [o["currentValue"] for o in options]

    mark = run.mark()
    reply = await p.set_mode(sid, "code")
    assert reply.result == {}, reply.raw
    ups = run.updates(mark, sid)
    assert [u["sessionUpdate"] for u in ups] == ["config_option_update"], ups
    assert current(ups[0]["configOptions"]) == ["code", "fast"]

    mark = run.mark()
    reply = await p.set_config(sid, "mode", "ask")
    assert current(reply.result["configOptions"]) == ["ask", "fast"], reply.raw
    assert run.kinds(mark, sid) == ["config_option_update"]

    mark = run.mark()
    reply = await p.set_config(sid, "model", "smart")
    assert current(reply.result["configOptions"]) == ["ask", "smart"], reply.raw
    assert run.kinds(mark, sid) == ["config_option_update"]

    # The same value again: success, nothing sent.
    mark = run.mark()
    assert (await p.set_mode(sid, "ask")).result == {}
    reply = await p.set_config(sid, "model", "smart")
    assert current(reply.result["configOptions"]) == ["ask", "smart"], reply.raw
    assert run.kinds(mark, sid) == []

    # Unknown modes, options and values.
    assert (await p.set_mode(sid, "yolo")).code == -32602
    assert (await p.set_config(sid, "model", "huge")).code == -32602
    assert (await p.set_config(sid, "colour", "red")).code == -32602
    # A change by set_mode shows in set_config_option's state, and the reverse.
    assert (await p.set_mode(sid, "code")).ok
    reply = await p.set_config(sid, "model", "fast")
    assert current(reply.result["configOptions"]) == ["code", "fast"], reply.raw
    # Prompts still run, and another session starts from the defaults.
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"
    other = (await p.new_session_reply()).result
    assert current(other["configOptions"]) == ["ask", "fast"]
    assert other["modes"]["currentModeId"] == "ask"


@scenario(erase_ids=True)
async def list_pages(run: Run) -> None:
    """--page-size 2, five sessions: pages of 2, 2, 1 following nextCursor, every session once in
    id order; a bad or tampered cursor is -32602, and so is a cursor from another process (each
    agent keys its cursors afresh). Which random ids fall on which page differs from run to run,
    so session ids and cursors are compared erased."""
    p = await run.start("--page-size", "2", store=run.store)
    created = sorted([await p.new_session() for _ in range(5)], key=lambda s: s.encode())
    seen, pages, cursor = [], [], None
    first_cursor = None
    while True:
        page = (await p.list(cursor=cursor)).result
        for s in page["sessions"]:
            assert s["cwd"] == CWD, s
        seen += [s["sessionId"] for s in page["sessions"]]
        pages.append(len(page["sessions"]))
        cursor = page.get("nextCursor")
        first_cursor = first_cursor or cursor
        if cursor is None:
            break
        assert len(pages) <= 5, "pagination does not end"
    assert pages == [2, 2, 1], pages
    assert seen == created
    # Filtered by cwd: the same pages; another cwd: nothing.
    page = (await p.list(cwd=CWD)).result
    assert len(page["sessions"]) == 2 and page.get("nextCursor"), page
    assert (await p.list(cwd="/usr")).result["sessions"] == []
    for bad in ("not-a-cursor", "", first_cursor[:-2] + ("AA" if not first_cursor.endswith("AA") else "BB"), "x" * 300):
        assert (await p.list(cursor=bad)).code == -32602, bad
    await p.hang_up()
    q = await run.start("--page-size", "2", store=run.store)
    assert (await q.list(cursor=first_cursor)).code == -32602
    assert len((await q.list()).result["sessions"]) == 2


@scenario(erase_ids=True)
async def list_default_page_size(run: Run) -> None:
    """Without --page-size a page holds 50 sessions; :memory: keeps nothing after exit. (Which
    random ids fall on which page differs from run to run: ids and cursors compared erased.)"""
    p = await run.start()
    created = [await p.new_session() for _ in range(51)]
    first = (await p.list()).result
    assert len(first["sessions"]) == 50 and first.get("nextCursor"), len(first["sessions"])
    second = (await p.list(cursor=first["nextCursor"])).result
    assert len(second["sessions"]) == 1 and "nextCursor" not in second, second
    assert sorted(s["sessionId"] for s in first["sessions"] + second["sessions"]) == sorted(created)
    await p.hang_up()
    q = await run.start()
    assert (await q.list()).result["sessions"] == []


@scenario()
async def command_line(run: Run) -> None:
    """A bad command line exits 2 before serving: exactly one line on stderr, nothing on stdout.
    ``--help`` (and ``-h``) prints the usage on stdout and exits 0, nothing on stderr."""
    for args in (("--page-size", "0"), ("--page-size", "-3"), ("--page-size", "many"), ("--bogus",), ("--store",)):
        code, out, err = await run.command("--store", ":memory:", *args)
        assert code == 2, (args, code, err)
        assert out == b"", (args, out)
        lines = err.decode().splitlines()
        assert len(lines) == 1 and err.endswith(b"\n") and lines[0].strip(), (args, err)
    for args in (("--help",), ("-h",), ("--store", ":memory:", "--help")):
        code, out, err = await run.command(*args)
        assert code == 0, (args, code, err)
        assert out.startswith(b"usage: ") and b"--store" in out and b"--page-size" in out, (args, out)
        assert err == b"", (args, err)


@scenario()
async def list_cwds(run: Run) -> None:
    """session/list reports each session's cwd and honours the cwd filter; a cwd is canonicalised
    when the session is created."""
    p = await run.start()
    a = await p.new_session("/tmp")
    b = await p.new_session("/usr")
    c = await p.new_session("/usr/../tmp/")
    listed = {s["sessionId"]: s["cwd"] for s in (await p.list()).result["sessions"]}
    assert listed == {a: "/tmp", b: "/usr", c: "/tmp"}, listed
    assert {s["sessionId"] for s in (await p.list(cwd="/usr")).result["sessions"]} == {b}
    assert {s["sessionId"] for s in (await p.list(cwd="/tmp")).result["sessions"]} == {a, c}
    # A relative cwd is refused before any session exists; an absolute one that does not exist is
    # kept as given (canonicalised only when it exists).
    assert (await p.new_session_reply("relative/dir")).code == -32602
    assert (await p.new_session_reply("")).code == -32602
    d = await p.new_session("/nonexistent/acp-conformance")
    listed = {s["sessionId"]: s["cwd"] for s in (await p.list()).result["sessions"]}
    assert listed == {a: "/tmp", b: "/usr", c: "/tmp", d: "/nonexistent/acp-conformance"}, listed


async def _history(p, run: Run) -> str:
    """A session with a thought, an allowed tool call and an echo; returns its id."""
    sid = await p.new_session()
    assert (await p.prompt(sid, "think deeply")).stop_reason == "end_turn"
    prompt = p.start_prompt(sid, "tool ls")
    (await p.permission()).select("allow_once")
    assert (await prompt).stop_reason == "end_turn"
    assert (await p.prompt(sid, "two words")).stop_reason == "end_turn"
    return sid


def _assert_replay(run: Run, mark: int, sid: str) -> None:
    ups = run.updates(mark, sid)
    assert len(run.out(mark)) == len(ups) + 1, "only the replay precedes the load response"
    kinds = [u["sessionUpdate"] for u in ups]
    assert kinds == [
        "user_message_chunk", "user_message_chunk", "user_message_chunk",
        "agent_thought_chunk", "agent_message_chunk", "agent_message_chunk", "agent_message_chunk",
        "tool_call",
        "usage_update",
    ], kinds
    assert run.texts("user_message_chunk", mark, sid) == ["think deeply", "tool ls", "two words"]
    assert run.texts("agent_thought_chunk", mark, sid) == ["deeply"]
    messages = run.texts("agent_message_chunk", mark, sid)
    assert messages[1:] == ["ls: done", "two words"], messages
    assert ups[7]["status"] == "completed", ups[7]
    # Each message's chunks under one `messageId` of its own: the three
    # user messages, the first reply's thought and text together, then the other two replies.
    ids = [u.get("messageId") for u in ups[:7]]
    assert all(isinstance(i, str) and i for i in ids), ids
    assert ids[3] == ids[4] and len({*ids[:4], *ids[5:]}) == 6, ids


@scenario()
async def load_after_restart(run: Run) -> None:
    """Two processes on the same --store file: the second lists the first one's sessions (with
    their titles), loads one (its history replayed before the response: every user message, then
    every assistant message, then every completed tool call, then one usage_update), and the
    loaded session is live; resume works across the restart too."""
    p = await run.start(store=run.store)
    sid = await _history(p, run)
    other = await p.new_session()
    assert (await p.prompt(other, "stream 2")).stop_reason == "end_turn"
    doomed = await p.new_session()
    await p.hang_up()

    q = await run.start(store=run.store)
    listed = {s["sessionId"]: s for s in (await q.list()).result["sessions"]}
    assert set(listed) == {sid, other, doomed}, listed
    # Delete works across the restart (the session is not live in this process).
    assert (await q.request("session/delete", {"sessionId": doomed})).result == {}
    listed = {s["sessionId"]: s for s in (await q.list()).result["sessions"]}
    assert set(listed) == {sid, other}, listed
    assert listed[sid]["title"] == "think deeply" and listed[other]["title"] == "stream 2", listed
    mark = run.mark()
    reply = await q.load(sid)
    assert reply.ok, reply.raw
    assert reply.result["modes"]["currentModeId"] == "ask", reply.raw
    _assert_replay(run, mark, sid)
    mark = run.mark()
    assert (await q.prompt(sid, "stream 1")).stop_reason == "end_turn"
    assert_usage_last(run, mark, sid, "after load")
    # Resume the other one: the response and nothing else.
    mark = run.mark()
    reply = await q.resume(other)
    assert reply.ok, reply.raw
    await q.expect_silence()
    assert run.updates(mark) == []
    assert (await q.prompt(other, "hello")).stop_reason == "end_turn"
    # Unknown sessions are not loadable.
    assert (await q.load("sess_00000000000000000")).code == -32002


@scenario()
async def load_live_and_closed(run: Run) -> None:
    """In one process: a closed session loads with its replay (in the four-bucket order) and is
    live again."""
    p = await run.start()
    sid = await _history(p, run)
    assert (await p.close(sid)).result == {}
    mark = run.mark()
    reply = await p.load(sid)
    assert reply.ok, reply.raw
    _assert_replay(run, mark, sid)
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"


@scenario()
async def reattach_live(run: Run) -> None:
    """Re-attach (docs/DEMO.md): session/load of a session live and idle on the same
    connection succeeds and replays its history before the response, exactly as a load after
    close does; session/resume of it answers with nothing before; it stays the same live session
    (one prompt slot, prompts go on); delete of it stays -32600."""
    p = await run.start()
    sid = await _history(p, run)
    mark = run.mark()
    reply = await p.load(sid)
    assert reply.ok, reply.raw
    _assert_replay(run, mark, sid)
    assert reply.result["modes"]["currentModeId"] == "ask", reply.raw
    mark = run.mark()
    reply = await p.resume(sid)
    assert reply.ok, reply.raw
    assert run.out(mark) == [reply.raw], run.out(mark)
    assert (await p.prompt(sid, "stream 2")).stop_reason == "end_turn"
    assert (await p.request("session/delete", {"sessionId": sid})).code == -32600
    # Loaded twice in a row: the second replay has the new turn too, and nothing twice.
    mark = run.mark()
    assert (await p.load(sid)).ok
    assert run.texts("user_message_chunk", mark, sid) == ["think deeply", "tool ls", "two words", "stream 2"]
    # Only with the cwd the session lives in.
    assert (await p.load(sid, cwd="/")).code == -32602


@scenario()
async def reattach_busy(run: Run) -> None:
    """With a prompt in flight, session/load and session/resume of the session are refused
    (-32600) and change nothing; once the prompt has ended (cancelled) both re-attach."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    prompt = p.start_prompt(sid, "sleep 3600000", timeout=10)
    await p.wait_for(is_update("session_info_update", sid), mark)
    assert (await p.load(sid)).code == -32600
    assert (await p.resume(sid)).code == -32600
    assert (await p.request("session/delete", {"sessionId": sid})).code == -32600
    await p.cancel(sid)
    assert (await prompt).stop_reason == "cancelled"
    assert (await p.resume(sid)).ok
    mark = run.mark()
    assert (await p.load(sid)).ok
    assert run.texts("user_message_chunk", mark, sid) == ["sleep 3600000"]
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"


@scenario()
async def resume(run: Run) -> None:
    """session/resume of a closed session: the response and no update at all; the session is live
    afterwards; unknown ids are -32002."""
    p = await run.start()
    sid = await _history(p, run)
    assert (await p.close(sid)).result == {}
    mark = run.mark()
    reply = await p.resume(sid)
    assert reply.ok, reply.raw
    await p.expect_silence()
    assert run.out(mark) == [reply.raw], run.out(mark)
    assert (await p.prompt(sid, "stream 2")).stop_reason == "end_turn"
    assert (await p.resume("sess_00000000000000000")).code == -32002


@scenario()
async def close_then_prompt(run: Run) -> None:
    """session/close answers {}; a prompt on the closed session is an error; closing again or an
    unknown session is -32002; a cancel for it is ignored."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    assert (await p.close(sid)).result == {}
    reply = await p.prompt(sid, "hello again")
    assert not reply.ok, reply.raw
    assert reply.code == -32002, reply.raw
    assert (await p.close(sid)).code == -32002
    await p.cancel(sid)
    await p.expect_silence(0.1)
    # Other sessions are untouched.
    other = await p.new_session()
    assert (await p.prompt(other, "stream 1")).stop_reason == "end_turn"


@scenario()
async def delete(run: Run) -> None:
    """session/delete of a live session is -32600; after close it succeeds, the session is gone
    from the list and neither loadable nor resumable."""
    p = await run.start()
    sid = await p.new_session()
    keep = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    reply = await p.request("session/delete", {"sessionId": sid})
    assert reply.code == -32600, reply.raw
    assert (await p.close(sid)).result == {}
    assert (await p.request("session/delete", {"sessionId": sid})).result == {}
    assert [s["sessionId"] for s in (await p.list()).result["sessions"]] == [keep]
    assert (await p.load(sid)).code == -32002
    assert (await p.resume(sid)).code == -32002
    # Deleting it again, or a session that never existed.
    await p.request("session/delete", {"sessionId": sid})
    await p.request("session/delete", {"sessionId": "sess_00000000000000000"})


@scenario()
async def cancel_request_prompt(run: Run) -> None:
    """$/cancel_request naming an in-flight session/prompt: the prompt answers `cancelled` (not
    -32800); naming a finished or unknown request does nothing."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    prompt = p.start_prompt(sid, "sleep 3600000", timeout=5)
    request = await _sent(run, mark, "session/prompt")
    await p.expect_silence(0.2)
    await p.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request["id"]}})
    reply = await prompt
    assert reply.stop_reason == "cancelled", reply.raw
    await p.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request["id"]}})
    await p.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4242}})
    await p.expect_silence(0.1)
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"


async def _sent(run: Run, since: int, method: str):
    for _ in range(200):
        for e in run.entries[since:]:
            if e.dir == "in" and isinstance(e.msg, dict) and e.msg.get("method") == method:
                return e.msg
        await asyncio.sleep(0.01)
    raise AssertionError(f"{method} was not sent")


@scenario()
async def second_prompt_refused(run: Run) -> None:
    """One prompt in flight per session: a second is -32600; another session is not blocked;
    session/cancel then ends the first `cancelled`."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    prompt = p.start_prompt(sid, "sleep 3600000", timeout=10)
    # The title follows the turn's start: the prompt is surely in flight.
    await p.wait_for(is_update("session_info_update", sid), mark)
    assert (await p.prompt(sid, "hello")).code == -32600
    other = await p.new_session()
    assert (await p.prompt(other, "stream 3")).stop_reason == "end_turn"
    await p.cancel(sid)
    assert (await prompt).stop_reason == "cancelled"
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"


@scenario()
async def back_to_back_prompts(run: Run) -> None:
    """A prompt sent the moment the previous prompt's response arrives is accepted: the session is
    no longer "prompt in flight" once its response is on the wire. 1000 rounds of `/compact`,
    `stream 1`, `hello`, each written as soon as the previous response is read: a window between
    the response reaching the pipe and the session's prompt slot being released shows up here as
    a -32600 "already has a prompt in flight" (a race, so caught in most runs, not all)."""
    p = await run.start()
    sid = await p.new_session()
    refused = []
    for i in range(ROUNDS):
        text = ("/compact", "stream 1", "hello")[i % 3]
        # Raw, the tightest loop a client can run: the next request is written as soon as the
        # response line is read.
        reply = await p.raw_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
        if "result" not in reply:
            refused.append((i, text, reply))
    assert not refused, f"{len(refused)} of {ROUNDS} prompts refused, first: {refused[0]}"


ROUNDS = 1000


@scenario()
async def cancel_before_prompt(run: Run) -> None:
    """A session/cancel only hits the prompt in flight when it was sent: one sent before a prompt
    (nothing in flight) does not cancel that prompt."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    await p.cancel(sid)
    mark = run.mark()
    reply = await p.prompt(sid, "sleep 50")
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["slept"]


@scenario()
async def close_during_prompt(run: Run) -> None:
    """session/close while a prompt runs: the prompt is interrupted and answers `cancelled` before
    the close answers {}; the session is gone afterwards."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    prompt = p.start_prompt(sid, "sleep 3600000", timeout=10)
    await p.expect_silence(0.2)
    mark = run.mark()
    assert (await p.close(sid)).result == {}
    assert (await prompt).stop_reason == "cancelled"
    responses = [m for m in run.out(mark) if "id" in m and "method" not in m]
    assert [("stopReason" in m["result"]) for m in responses] == [True, False], responses
    assert (await p.prompt(sid, "hello")).code == -32002


@scenario()
async def close_pending_permission(run: Run) -> None:
    """session/close while a permission request is pending: the agent abandons the request
    ($/cancel_request naming it), the prompt answers `cancelled`, then the close answers {}. The
    client's late answer to the abandoned request is ignored."""
    p = await run.start()
    sid = await p.new_session()
    prompt = p.start_prompt(sid, "tool rm", timeout=10)
    ask = await p.permission()
    mark = run.mark()
    assert (await p.close(sid)).result == {}
    assert (await prompt).stop_reason == "cancelled"
    out = run.out(mark)
    cancels = [m for m in out if m.get("method") == "$/cancel_request"]
    assert len(cancels) == 1, out
    assert not [t for t in run.texts("agent_message_chunk", mark, sid) if "rm: done" in t]
    ask.cancelled()
    await p.expect_silence(0.2)
    assert len((await p.list()).result["sessions"]) == 1


HANG_UP = (
    "stdin's end while a turn runs: the agent answers the prompt `cancelled` on the pipe before it "
    "exits; a remote client that hangs up has no channel left to receive that answer"
)


async def _prompts_answered(run: Run, count: int) -> None:
    prompts = [e.msg["id"] for e in run.entries if e.dir == "in" and e.msg.get("method") == "session/prompt"]
    answers = {m["id"]: m for m in run.out() if "id" in m and "method" not in m}
    for request_id in prompts[-count:]:
        assert request_id in answers, f"prompt {request_id} unanswered after the hang-up"
        assert answers[request_id].get("result", {}).get("stopReason") == "cancelled", answers[request_id]


@scenario(stdio_only=HANG_UP)
async def hang_up_during_sleep(run: Run) -> None:
    """The client hangs up (EOF) while a prompt sleeps: the session is closed through the close
    orchestration, so the prompt is still answered, `cancelled`, and the agent exits 0."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    sleeping = p.start_prompt(sid, "sleep 3600000", timeout=10)
    await _sent(run, mark, "session/prompt")
    await p.expect_silence(0.2)
    assert await p.hang_up() == 0
    try:
        await sleeping
    except Exception:  # the SDK may see the connection close first; the transcript decides
        pass
    await _prompts_answered(run, 1)


@scenario(stdio_only=HANG_UP)
async def hang_up_pending_permission(run: Run) -> None:
    """The client hangs up (EOF) while a turn waits for a permission answer: the session is closed
    through the close orchestration (interrupt, then deny the pending gate), so the prompt is
    answered `cancelled`, and the agent exits 0."""
    p = await run.start()
    sid = await p.new_session()
    asking = p.start_prompt(sid, "tool rm", timeout=10)
    await p.permission()
    await p.expect_silence(0.2)
    mark = run.mark()
    assert await p.hang_up() == 0
    try:
        await asking
    except Exception:  # the SDK may see the connection close first; the transcript decides
        pass
    await _prompts_answered(run, 1)
    # The turn was interrupted before its gate was denied: the denial never ran the tool's
    # "denied" branch.
    assert run.updates(mark, sid) == [], run.updates(mark, sid)


@scenario(compare=MULTISET, why="two sessions stream at once: how their updates interleave on the one "
          "pipe depends on scheduling; each session's own order is asserted by the scenario")
async def concurrent_sessions(run: Run) -> None:
    """Two sessions stream at the same time on one connection: each session's updates arrive in
    order, and both prompts end end_turn."""
    p = await run.start()
    a = await p.new_session()
    b = await p.new_session()
    for sid in (a, b):
        assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    first, second = p.start_prompt(a, "stream 30"), p.start_prompt(b, "stream 30")
    assert (await first).stop_reason == "end_turn"
    assert (await second).stop_reason == "end_turn"
    for sid in (a, b):
        assert run.texts("agent_message_chunk", mark, sid) == [f"t{i} " for i in range(1, 31)]
        assert_usage_last(run, mark, sid, sid)


@scenario(stdio_only="the trace is compared with the agent's own pipes, a line that is not JSON included")
async def wire_trace(run: Run) -> None:
    """ACP_FACADE_WIRE_TRACE=<file>: every message in and out recorded as JSON lines
    {"ts","dir","msg"}, in the order of each direction on the pipes (the trace only observes)."""
    trace = run.dir / "wire-trace.jsonl"
    p = await run.start(env={"ACP_FACADE_WIRE_TRACE": str(trace)})
    sid = await p.new_session()
    assert (await p.prompt(sid, "stream 3")).stop_reason == "end_turn"
    await p.send_line("not json")
    await p.next_raw()
    await p.hang_up()
    records = [json.loads(line) for line in Path(trace).read_text().splitlines()]
    for r in records:
        assert set(r) == {"ts", "dir", "msg"} and r["dir"] in ("in", "out"), r
        assert r["ts"].endswith("Z") and "T" in r["ts"], r
    for direction in ("in", "out"):
        traced = [r["msg"] for r in records if r["dir"] == direction]
        piped = [e.msg for e in run.entries if e.dir == direction]
        assert traced == piped, (direction, traced, piped)
