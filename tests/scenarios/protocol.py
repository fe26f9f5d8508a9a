"""The JSON-RPC layer over raw pipes (no SDK): malformed input never kills the connection and is
classified precisely (DESIGN.md "Wire types and the connection"), session ids are validated before
they are looked up, initialize may come late or twice (the spec asks clients to send it once,
first; agents serve those that do not, as the official SDKs' do).

Not covered here: a line over the size limit. None of the demo agents can be configured with a
smaller limit than the default (16 MiB or more), so the case lives in the core's tests.
"""

from __future__ import annotations

import json
from typing import Any, List

from conformance.remote import HTTP, HTTP_CONNECTION
from conformance.scenario import scenario
from conformance.wire import CWD, Peer, Run

INIT = {"protocolVersion": 1}


async def _raw_agent(run: Run, initialize: bool = True) -> Peer:
    p = await run.start(sdk=False)
    if initialize:
        reply = await p.raw_request("initialize", INIT)
        assert reply["result"]["protocolVersion"] == 1, reply
    return p


async def _before_marker(p: Peer) -> List[Any]:
    """Every message the agent wrote before answering a fresh session/list (which proves the
    connection still serves): the answers to what was sent before it."""
    reply = await p.raw_request("session/list", {})
    assert "result" in reply, reply
    found = []
    while not p._raw_inbox.empty():
        found.append(p._raw_inbox.get_nowait())
    return found


def _code(message: Any) -> Any:
    return message.get("error", {}).get("code") if isinstance(message, dict) else None


@scenario(stdio_only="lines that are not JSON (or not UTF-8): the official client's remote streams carry JSON messages only")
async def not_json(run: Run) -> None:
    """A line that is not JSON gets -32700 with id null, and the connection goes on."""
    p = await _raw_agent(run)
    for line in ("this is not json", "{", '{"jsonrpc":"2.0","id":1,"method":"session/list"', "[1,2", "nul\u0000l", "'single'"):
        await p.send_line(line)
        got = await _before_marker(p)
        assert [(_code(m), m.get("id", "missing")) for m in got] == [(-32700, None)], (line, got)
    await p.send_bytes(b'{"jsonrpc":"2.0","id":"x","method":"session/list","params":{}}\xff\xfe\n')
    got = await _before_marker(p)
    assert [(_code(m), m.get("id", "missing")) for m in got] == [(-32700, None)], got
    # Blank lines are answered the same way by every agent (compared, not asserted).
    await p.send_line("")
    await p.send_line("   ")
    await _before_marker(p)


@scenario(
    not_over={
        HTTP: "Streamable HTTP refuses a body that is not a JSON-RPC object (a scalar, a batch) with 400 "
        "before the agent reads it, and the SDK's HTTP client then ends the connection"
    }
)
async def not_a_request(run: Run) -> None:
    """JSON that is not a request object gets -32600: arrays (no batches in ACP), scalars, objects
    without jsonrpc 2.0 or with a method that is not a string or an id that is not a string or
    number."""
    p = await _raw_agent(run)
    for line in (
        "[]",
        "42",
        '"text"',
        "null",
        "true",
        "{}",
        '{"jsonrpc":"2.0"}',
        '{"jsonrpc":"1.0","id":1,"method":"session/list","params":{}}',
        '{"id":2,"method":"session/list","params":{}}',
        '{"jsonrpc":"2.0","id":3,"method":5}',
        '{"jsonrpc":"2.0","id":{"x":1},"method":"session/list","params":{}}',
        '{"jsonrpc":"2.0","id":[4],"method":"session/list","params":{}}',
        '[{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}]',
    ):
        await p.send_line(line)
        got = await _before_marker(p)
        assert [_code(m) for m in got] == [-32600], (line, got)
    # Responses to requests the agent never made are handled the same way by every agent
    # (compared, not asserted).
    for line in ('{"jsonrpc":"2.0","id":99,"result":{}}', '{"jsonrpc":"2.0","id":"q","error":{"code":1,"message":"m"}}'):
        await p.send_line(line)
        await _before_marker(p)


@scenario()
async def unknown_method(run: Run) -> None:
    """An unknown method is -32601, an unknown notification is ignored."""
    p = await _raw_agent(run)
    for method in ("session/nope", "_acme/extension", "fs/read_text_file", "session/request_permission", "terminal/create"):
        reply = await p.raw_request(method, {})
        assert _code(reply) == -32601, (method, reply)
    for method in ("session/nope", "_acme/notice", "session/update"):
        await p.send({"jsonrpc": "2.0", "method": method, "params": {}})
    assert await _before_marker(p) == []


@scenario(not_over={HTTP: HTTP_CONNECTION})
async def bad_params_initialize(run: Run) -> None:
    """initialize params that do not decode are -32602 naming the field; a good initialize then
    succeeds on the same connection."""
    p = await _raw_agent(run, initialize=False)
    reply = await p.raw_request("initialize", {})
    assert _code(reply) == -32602 and "protocolVersion" in reply["error"]["message"], reply
    reply = await p.raw_request("initialize", {"protocolVersion": "one"})
    assert _code(reply) == -32602, reply
    assert "result" in await p.raw_request("initialize", INIT)


@scenario()
async def bad_params(run: Run) -> None:
    """Params that do not decode are -32602 with a message naming the field; the connection and
    the session go on."""
    p = await _raw_agent(run)
    sid = (await p.raw_request("session/new", {"cwd": CWD, "mcpServers": []}))["result"]["sessionId"]
    cases = [
        ("session/new", {"mcpServers": []}, "cwd"),
        ("session/new", {"cwd": 5, "mcpServers": []}, "cwd"),
        ("session/new", [], None),
        ("session/prompt", {"sessionId": sid, "prompt": "hi"}, "prompt"),
        ("session/prompt", {"sessionId": sid}, "prompt"),
        ("session/prompt", {"sessionId": sid, "prompt": [{"type": "video", "url": "x"}]}, None),
        ("session/prompt", {"sessionId": sid, "prompt": [{"type": "image", "mimeType": "image/png"}]}, "prompt"),
        (
            "session/new",
            {"cwd": CWD, "mcpServers": [{"type": "sse", "name": "s", "url": "https://example.com/sse", "headers": []}]},
            "mcpServers[0]",
        ),
        ("session/set_mode", {"sessionId": sid}, "modeId"),
        ("session/list", {"cursor": 5}, "cursor"),
        ("session/load", {"sessionId": sid}, None),
    ]
    unnamed = []
    for method, params, field in cases:
        reply = await p.raw_request(method, params)
        assert _code(reply) == -32602, (method, params, reply)
        if field and field not in reply["error"]["message"]:
            unnamed.append((method, params, reply["error"]["message"]))
    reply = await p.raw_request("session/new", None, omit_params=True)
    assert _code(reply) == -32602, reply
    # session/cancel is a notification: as a request it is an unknown method.
    assert _code(await p.raw_request("session/cancel", {"sessionId": sid})) == -32601
    assert await _before_marker(p) == []
    reply = await p.raw_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "stream 1"}]})
    assert reply["result"]["stopReason"] == "end_turn", reply
    assert not unnamed, f"-32602 messages that do not name the field: {unnamed}"


@scenario(
    not_over={
        HTTP: "a session/cancel without a session id cannot name its session in the Acp-Session-Id header: "
        "Streamable HTTP refuses it with 400 before the agent sees it, and the SDK's HTTP client then "
        "ends the connection"
    }
)
async def bad_params_notification(run: Run) -> None:
    """A notification whose params do not decode is dropped without an answer; the connection
    goes on."""
    p = await _raw_agent(run)
    sid = (await p.raw_request("session/new", {"cwd": CWD, "mcpServers": []}))["result"]["sessionId"]
    await p.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"nope": 1}})
    await p.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": {}}})
    assert await _before_marker(p) == []
    reply = await p.raw_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "stream 1"}]})
    assert reply["result"]["stopReason"] == "end_turn", reply


@scenario(not_over={HTTP: HTTP_CONNECTION})
async def before_initialize(run: Run) -> None:
    """Requests before initialize are served as for a client without capabilities, with their
    usual errors; a session made then still works after initialize, which may be sent again and
    is answered the same way each time."""
    p = await _raw_agent(run, initialize=False)
    made = await p.raw_request("session/new", {"cwd": CWD, "mcpServers": []})
    sid = made["result"]["sessionId"]
    listed = await p.raw_request("session/list", {})
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid], listed
    unknown = await p.raw_request(
        "session/prompt", {"sessionId": "sess_00000000000000000", "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert _code(unknown) == -32002, unknown
    assert _code(await p.raw_request("authenticate", {"methodId": "x"})) == -32602
    await p.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    # An unknown method before initialize: answered the same way by every agent (compared).
    await p.raw_request("session/nope", {})
    first = await p.raw_request("initialize", INIT)
    assert first["result"]["protocolVersion"] == 1, first
    again = await p.raw_request("initialize", {**INIT, "clientCapabilities": {"terminal": True}})
    assert again["result"] == first["result"], (first, again)
    reply = await p.raw_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "stream 1"}]})
    assert reply["result"]["stopReason"] == "end_turn", reply
    assert "result" in await p.raw_request("session/new", {"cwd": CWD, "mcpServers": []})


@scenario()
async def initialize_first(run: Run) -> None:
    """initialize is answered before the next line is read: with initialize and session/new
    written at once, the initialize response comes first and the session/new succeeds."""
    p = await _raw_agent(run, initialize=False)
    lines = [
        {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "id": "new", "method": "session/new", "params": {"cwd": CWD, "mcpServers": []}},
    ]
    await p.send_bytes(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    first, second = await p.next_raw(), await p.next_raw()
    assert first["id"] == "init" and "result" in first, first
    assert second["id"] == "new" and "result" in second, second


def _session_params(method: str, sid: Any) -> Any:
    return {
        "session/prompt": {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]},
        "session/load": {"sessionId": sid, "cwd": CWD, "mcpServers": []},
        "session/resume": {"sessionId": sid, "cwd": CWD, "mcpServers": []},
        "session/close": {"sessionId": sid},
        "session/delete": {"sessionId": sid},
        "session/set_mode": {"sessionId": sid, "modeId": "code"},
        "session/set_config_option": {"sessionId": sid, "configId": "model", "value": "smart"},
    }[method]


@scenario(
    not_over={
        HTTP: "over Streamable HTTP a message about a session names it in the Acp-Session-Id header: "
        "the transport refuses a malformed id (empty, not a string) with 400 before the agent sees it"
    }
)
async def session_ids(run: Run) -> None:
    """Every session-scoped method validates the id first (empty, longer than 256 bytes, control
    characters, not a string: -32602), then looks it up (unknown: -32002); session/cancel for
    such ids is ignored; the live session is untouched."""
    p = await _raw_agent(run)
    sid = (await p.raw_request("session/new", {"cwd": CWD, "mcpServers": []}))["result"]["sessionId"]
    methods = ("session/prompt", "session/load", "session/resume", "session/close", "session/delete", "session/set_mode", "session/set_config_option")
    malformed = ["", "x" * 257, "é" * 129, "bad\u0001id", "tab\tid", 42, None, ["sess"]]
    unknown = ["sess_00000000000000000", "../../etc/passwd", "x" * 256, "' OR 1=1 --", "\u00e9\u00e8"]
    for method in methods:
        for bad in malformed:
            reply = await p.raw_request(method, _session_params(method, bad))
            assert _code(reply) == -32602, (method, bad, reply)
        for missing in unknown:
            reply = await p.raw_request(method, _session_params(method, missing))
            if method == "session/delete":
                # Not a live session, so the store's deleter is asked: deleting nothing succeeds.
                assert reply.get("result") == {}, (method, missing, reply)
            else:
                assert _code(reply) == -32002, (method, missing, reply)
    for bad in malformed + unknown:
        await p.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": bad}})
    assert await _before_marker(p) == []
    reply = await p.raw_request("session/prompt", _session_params("session/prompt", sid))
    assert reply["result"]["stopReason"] == "end_turn", reply


@scenario()
async def duplicate_request_id(run: Run) -> None:
    """A request reusing the id of a request still in flight is -32600 (with that id); the first
    request is unaffected, and the id is free again once it is answered."""
    p = await _raw_agent(run)
    sid = (await p.raw_request("session/new", {"cwd": CWD, "mcpServers": []}))["result"]["sessionId"]
    assert (await p.raw_request("session/prompt", _session_params("session/prompt", sid)))["result"]
    await _before_marker(p)  # the first prompt's updates
    await p.send({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "sleep 3600000"}]}})
    await p.expect_silence(0.2)
    await p.send({"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}})
    duplicate = await p.next_raw()
    assert duplicate["id"] == 7 and _code(duplicate) == -32600, duplicate
    await p.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    answer = await p.next_raw()
    assert answer["id"] == 7 and answer["result"]["stopReason"] == "cancelled", answer
    reply = await p.raw_exchange({"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}}, 7)
    assert "result" in reply, reply


@scenario()
async def bad_params_config_value(run: Run) -> None:
    """session/set_config_option without `value`: -32602 naming `value`."""
    p = await _raw_agent(run)
    sid = (await p.raw_request("session/new", {"cwd": CWD, "mcpServers": []}))["result"]["sessionId"]
    reply = await p.raw_request("session/set_config_option", {"sessionId": sid, "configId": "mode"})
    assert _code(reply) == -32602, reply
    assert "value" in reply["error"]["message"], reply
