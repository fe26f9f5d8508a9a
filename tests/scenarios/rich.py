"""docs/DEMO.md's rich lines: `plan N`, `edit PATH`, `/shout TEXT`, `switch MODE`, `mcp` with the MCP
servers of session/new, load and resume (sse refused), prompts whose first block is an image, audio,
an embedded resource or a resource link, a prompt's `_meta.traceparent` echoed on its response,
and the extension method `_demo/echo`; and what initialize advertises for them."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional

from conformance.scenario import scenario
from conformance.wire import CWD, Peer, Reply, Run

from .prompts import assert_usage_last

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

STDIO = {"name": "fs", "command": "/usr/bin/mcp-fs", "args": ["--root", "/tmp"], "env": [{"name": "LEVEL", "value": "2"}]}
HTTP = {"type": "http", "name": "web", "url": "https://example.com/mcp", "headers": [{"name": "Authorization", "value": "t"}]}
SSE = {"type": "sse", "name": "old", "url": "https://example.com/sse", "headers": []}


async def _session(p: Peer, servers: List[Dict[str, Any]]) -> str:
    reply = await p.request("session/new", {"cwd": CWD, "mcpServers": servers})
    assert reply.ok, reply.raw
    return str(reply.result["sessionId"])


async def _prompt(p: Peer, sid: str, blocks: List[Dict[str, Any]], meta: Optional[Dict[str, Any]] = None) -> Reply:
    params: Dict[str, Any] = {"sessionId": sid, "prompt": blocks}
    if meta is not None:
        params["_meta"] = meta
    return await p.request("session/prompt", params)


def _turn(run: Run, since: int, sid: str, reply: Reply, chunks: List[str], what: str) -> None:
    """The turn ended end_turn with exactly `chunks`, one usage_update last."""
    assert reply.stop_reason == "end_turn", (what, reply.raw)
    assert run.texts("agent_message_chunk", since, sid) == chunks, (what, run.texts("agent_message_chunk", since, sid))
    assert_usage_last(run, since, sid, what)


def _statuses(update: Dict[str, Any]) -> List[str]:
    return [e["status"] for e in update["entries"]]


@scenario()
async def rich_capabilities(run: Run) -> None:
    """initialize advertises promptCapabilities image, audio and embeddedContext,
    mcpCapabilities.http (not sse) and the extension method `_demo/echo` under `_meta`."""
    p = await run.start(initialize=False)
    caps = (await p.initialize()).result["agentCapabilities"]
    assert caps["promptCapabilities"] == {"image": True, "audio": True, "embeddedContext": True}, caps
    assert caps["mcpCapabilities"] == {"http": True, "sse": False}, caps
    assert caps["_meta"] == {"_demo/echo": {}}, caps


@scenario()
async def plan(run: Run) -> None:
    """`plan N`: the whole plan (N pending `step i` entries, priority medium), then one whole plan
    per completed step; chunk `planned`; `plan 0` is one empty plan. session/load replays the
    latest plan once, after everything else."""
    p = await run.start(store=run.store)
    sid = await p.new_session()
    mark = run.mark()
    reply = await p.prompt(sid, "plan 3")
    _turn(run, mark, sid, reply, ["planned"], "plan 3")
    plans = [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "plan"]
    assert [_statuses(u) for u in plans] == [
        ["pending", "pending", "pending"],
        ["completed", "pending", "pending"],
        ["completed", "completed", "pending"],
        ["completed", "completed", "completed"],
    ], plans
    assert plans[0]["entries"] == [
        {"content": f"step {i}", "priority": "medium", "status": "pending"} for i in (1, 2, 3)
    ], plans[0]
    mark = run.mark()
    reply = await p.prompt(sid, "plan 0")
    _turn(run, mark, sid, reply, ["planned"], "plan 0")
    assert [u["entries"] for u in run.updates(mark, sid) if u["sessionUpdate"] == "plan"] == [[]]
    mark = run.mark()
    reply = await p.prompt(sid, "plan 2")
    _turn(run, mark, sid, reply, ["planned"], "plan 2")
    # After a restart, load replays the session's latest plan, once, last.
    await p.hang_up()
    p = await run.start(store=run.store)
    mark = run.mark()
    assert (await p.load(sid)).ok
    replayed = run.updates(mark, sid)
    kinds = [u["sessionUpdate"] for u in replayed]
    assert kinds.count("plan") == 1 and kinds[-1] == "plan", kinds
    assert _statuses(replayed[-1]) == ["completed", "completed"], replayed[-1]
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"


@scenario()
async def edit(run: Run) -> None:
    """`edit PATH`: one `tool_call` (kind edit, title `edit PATH` as typed, in_progress, the absolute
    path at line 1, a diff old → new), then one `tool_call_update` completed with rawOutput
    `{"ok": true}`; chunk `edited PATH`. session/load replays the call once, with its diff and
    location, finished."""
    p = await run.start(store=run.store)
    sid = await p.new_session()
    expected = {"src/./a.rs": f"{CWD}/src/a.rs", "/abs/b.rs": "/abs/b.rs"}
    for typed, path in expected.items():
        mark = run.mark()
        reply = await p.prompt(sid, f"edit {typed}")
        _turn(run, mark, sid, reply, [f"edited {typed}"], f"edit {typed}")
        calls = [u for u in run.updates(mark, sid) if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert [u["sessionUpdate"] for u in calls] == ["tool_call", "tool_call_update"], calls
        started, done = calls
        call_id = started["toolCallId"]
        assert {k: v for k, v in started.items() if k != "toolCallId"} == {
            "sessionUpdate": "tool_call",
            "title": f"edit {typed}",
            "kind": "edit",
            "status": "in_progress",
            "locations": [{"path": path, "line": 1}],
            "content": [{"type": "diff", "path": path, "oldText": "old\n", "newText": "new\n"}],
        }, started
        assert done == {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed", "rawOutput": {"ok": True}}, done
    # After a restart, load replays both calls once each, finished, with their diff and location.
    await p.hang_up()
    p = await run.start(store=run.store)
    mark = run.mark()
    assert (await p.load(sid)).ok
    replayed = [u for u in run.updates(mark, sid) if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    started = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
    assert [u["title"] for u in started] == [f"edit {t}" for t in expected], replayed
    for update, path in zip(started, expected.values()):
        assert update["locations"] == [{"path": path, "line": 1}], update
        assert update["content"] == [{"type": "diff", "path": path, "oldText": "old\n", "newText": "new\n"}], update
    finished = {u["toolCallId"]: u.get("status") for u in replayed}
    assert len(finished) == 2 and set(finished.values()) == {"completed"}, replayed


@scenario()
async def shout(run: Run) -> None:
    """`/shout TEXT`: advertised with `compact` in the first prompt's available_commands_update
    (description, input hint `text`); answers TEXT in capitals (trimmed; `ß` becomes `SS`); only
    `/shout` exactly is the command."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    reply = await p.prompt(sid, "/shout hello world")
    _turn(run, mark, sid, reply, ["HELLO WORLD"], "/shout hello world")
    adverts = [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "available_commands_update"]
    assert len(adverts) == 1, adverts
    assert adverts[0]["availableCommands"] == [
        {"name": "compact", "description": "Compact the conversation to free context"},
        {"name": "shout", "description": "Repeat the input in capitals", "input": {"hint": "text"}},
    ], adverts[0]
    for text, chunks in (
        ("  /shout  straße ", ["STRASSE"]),
        ("/shout\u00a0naïve café", ["NAÏVE CAFÉ"]),
        ("/shout", [""]),
        ("/SHOUT x", ["/SHOUT ", "x"]),
        ("/shouty x", ["/shouty ", "x"]),
    ):
        mark = run.mark()
        reply = await p.prompt(sid, text)
        _turn(run, mark, sid, reply, chunks, text)
        assert "available_commands_update" not in run.kinds(mark, sid), text


@scenario()
async def switch(run: Run) -> None:
    """`switch MODE`: the agent changes its own mode — current_mode_update, then
    config_option_update with the full state, before the chunk `mode: MODE`; the current mode again
    sends neither; an unknown mode: chunk `unknown mode MODE`, nothing changed. The client then
    sees the switched mode."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    reply = await p.prompt(sid, "switch code")
    _turn(run, mark, sid, reply, ["mode: code"], "switch code")
    ups = run.updates(mark, sid)
    assert [u["sessionUpdate"] for u in ups] == [
        "current_mode_update",
        "config_option_update",
        "agent_message_chunk",
        "usage_update",
    ], ups
    assert ups[0]["currentModeId"] == "code", ups[0]
    assert [o["currentValue"] for o in ups[1]["configOptions"]] == ["code", "fast"], ups[1]
    for text, chunk in (("switch code", "mode: code"), ("switch yolo", "unknown mode yolo"), ("switch", "unknown mode ")):
        mark = run.mark()
        reply = await p.prompt(sid, text)
        _turn(run, mark, sid, reply, [chunk], text)
        assert run.kinds(mark, sid) == ["agent_message_chunk", "usage_update"], (text, run.kinds(mark, sid))
    reply = await p.set_config(sid, "model", "smart")
    assert [o["currentValue"] for o in reply.result["configOptions"]] == ["code", "smart"], reply.raw
    # Back again, and the client's own change of the mode sends no current_mode_update.
    mark = run.mark()
    reply = await p.prompt(sid, "switch ask")
    _turn(run, mark, sid, reply, ["mode: ask"], "switch ask")
    assert run.kinds(mark, sid)[:2] == ["current_mode_update", "config_option_update"]
    mark = run.mark()
    assert (await p.set_mode(sid, "code")).ok
    assert run.kinds(mark, sid) == ["config_option_update"]


@scenario()
async def mcp_servers(run: Run) -> None:
    """`mcp`: the session's MCP servers in the order given, `NAME(TRANSPORT)`, or `mcp: none`; the
    servers are those of the request that opened the session (new, load or resume). An sse server
    is refused with -32602 on session/new, load and resume, and changes nothing."""
    p = await run.start(store=run.store)
    sid = await p.new_session()
    mark = run.mark()
    _turn(run, mark, sid, await p.prompt(sid, "mcp"), ["mcp: none"], "no servers")
    both = await _session(p, [STDIO, HTTP])
    mark = run.mark()
    _turn(run, mark, both, await p.prompt(both, "mcp"), ["mcp: fs(stdio) web(http)"], "stdio and http")
    web_first = await _session(p, [HTTP, dict(STDIO, name="fs2")])
    mark = run.mark()
    _turn(run, mark, web_first, await p.prompt(web_first, "mcp"), ["mcp: web(http) fs2(stdio)"], "in order")
    for method, params in (
        ("session/new", {"cwd": CWD, "mcpServers": [STDIO, SSE]}),
        ("session/load", {"sessionId": both, "cwd": CWD, "mcpServers": [SSE]}),
        ("session/resume", {"sessionId": both, "cwd": CWD, "mcpServers": [SSE]}),
    ):
        reply = await p.request(method, params)
        assert reply.code == -32602, (method, reply.raw)
    assert (await p.close(both)).ok
    for method, params in (
        ("session/load", {"sessionId": both, "cwd": CWD, "mcpServers": [SSE]}),
        ("session/resume", {"sessionId": both, "cwd": CWD, "mcpServers": [HTTP, SSE]}),
    ):
        reply = await p.request(method, params)
        assert reply.code == -32602, (method, reply.raw)
    # Loaded, and resumed after a close, the session has the servers of that request.
    assert (await p.request("session/load", {"sessionId": both, "cwd": CWD, "mcpServers": [HTTP]})).ok
    mark = run.mark()
    _turn(run, mark, both, await p.prompt(both, "mcp"), ["mcp: web(http)"], "after load")
    assert (await p.close(both)).ok
    assert (await p.request("session/resume", {"sessionId": both, "cwd": CWD, "mcpServers": [STDIO]})).ok
    mark = run.mark()
    _turn(run, mark, both, await p.prompt(both, "mcp"), ["mcp: fs(stdio)"], "after resume")


@scenario()
async def prompt_blocks(run: Run) -> None:
    """A prompt whose first block is not text: `image MIME BYTES`, `audio MIME BYTES` (BYTES the
    length of the decoded data; 0 unless it is canonical base64), `resource URI CHARS` (code points
    of the embedded text; 0 for a blob), `link URI`; whatever follows. Text first: the script."""
    p = await run.start()
    sid = await p.new_session()
    cases = (
        ({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}, "image image/png 8"),
        ({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}, "audio audio/wav 4"),
        (
            {"type": "resource", "resource": {"uri": "file:///tmp/n.md", "text": "héllo ✓ 🚀", "mimeType": "text/markdown"}},
            "resource file:///tmp/n.md 9",
        ),
        ({"type": "resource", "resource": {"uri": "file:///tmp/b.bin", "blob": "AAEC"}}, "resource file:///tmp/b.bin 0"),
        ({"type": "resource_link", "uri": "file:///tmp/a.rs", "name": "a.rs"}, "link file:///tmp/a.rs"),
        ({"type": "image", "mimeType": "image/gif", "data": ""}, "image image/gif 0"),
        ({"type": "image", "mimeType": "image/png", "data": "not base64!"}, "image image/png 0"),
        ({"type": "audio", "mimeType": "audio/ogg", "data": "AB=="}, "audio audio/ogg 0"),
        ({"type": "audio", "mimeType": "audio/ogg", "data": "AAA"}, "audio audio/ogg 0"),
    )
    for block, chunk in cases:
        mark = run.mark()
        reply = await _prompt(p, sid, [block, {"type": "text", "text": "stream 3"}])
        _turn(run, mark, sid, reply, [chunk], chunk)
    mark = run.mark()
    reply = await _prompt(
        p, sid, [{"type": "text", "text": "stream 2"}, {"type": "image", "mimeType": "image/png", "data": "AA=="}]
    )
    _turn(run, mark, sid, reply, ["t1 ", "t2 "], "text first")


@scenario()
async def traceparent(run: Run) -> None:
    """A prompt's `_meta.traceparent` comes back in the response's `_meta` (nothing else of the
    request's `_meta`), whatever the turn does (a cancelled one included); a prompt without one gets
    no `_meta`."""
    p = await run.start()
    sid = await p.new_session()
    text = [{"type": "text", "text": "hello"}]
    reply = await _prompt(p, sid, text, {"traceparent": TRACEPARENT, "other": 1})
    assert reply.raw["result"] == {"stopReason": "end_turn", "_meta": {"traceparent": TRACEPARENT}}, reply.raw
    reply = await _prompt(p, sid, [{"type": "text", "text": "stream 2"}], {"tracestate": "x=1"})
    assert reply.raw["result"] == {"stopReason": "end_turn"}, reply.raw
    reply = await p.prompt(sid, "plan 1")
    assert reply.raw["result"] == {"stopReason": "end_turn"}, reply.raw
    reply = await _prompt(p, sid, [{"type": "image", "mimeType": "image/png", "data": "AA=="}], {"traceparent": TRACEPARENT})
    assert reply.raw["result"]["_meta"] == {"traceparent": TRACEPARENT}, reply.raw
    # A cancelled turn answers with it too.
    sleeping = asyncio.get_running_loop().create_task(
        _prompt(p, sid, [{"type": "text", "text": "sleep 3600000"}], {"traceparent": TRACEPARENT})
    )
    await p.expect_silence(0.2)
    await p.cancel(sid)
    reply = await sleeping
    assert reply.raw["result"] == {"stopReason": "cancelled", "_meta": {"traceparent": TRACEPARENT}}, reply.raw


@scenario()
async def extension_methods(run: Run) -> None:
    """`_demo/echo` answers its params object as its result (`{}` without params); any other `_…`
    request answers -32601, an `_…` notification (even `_demo/echo`) is ignored."""
    p = await run.start()
    params = {"a": [1, {"b": "é"}], "n": None, "deep": {"x": [True, 1.5]}}
    reply = await p.raw_request("_demo/echo", params)
    assert reply["result"] == params, reply
    assert (await p.raw_request("_demo/echo", None, omit_params=True))["result"] == {}
    assert (await p.raw_request("_demo/echo", {}))["result"] == {}
    for method in ("_demo/other", "_x", "_demo/echo/", "demo/echo"):
        reply = await p.raw_request(method, {})
        assert reply.get("error", {}).get("code") == -32601, (method, reply)
    for method in ("_demo/echo", "_x"):
        await p.send({"jsonrpc": "2.0", "method": method, "params": {"q": 1}})
    await p.expect_silence(0.2)
    sid = await p.new_session()
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"
