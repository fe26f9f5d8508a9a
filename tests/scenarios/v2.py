"""The prompt script and the session methods under ACP v2 (Preview): docs/DEMO.md's lines in v2's
terms, from the same demo code. Driven with raw JSON-RPC (the official Python client speaks v1
only), every message validated against the v2 schema.

What each checks beyond its lines: `session/prompt` answers at once with the user message's
`messageId`, then `user_message` and `state_update` running; the turn ends with `state_update`
idle and its stop reason, nothing of the turn after it; chunks carry `messageId`s.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from conformance.remote import HTTP, HTTP_CONNECTION
from conformance.scenario import scenario
from conformance.wire import CWD, Peer, Run

INFO = {"name": "conformance", "version": "1"}


async def _start(run: Run, *args: str, store: Optional[str] = ":memory:") -> Peer:
    """An agent initialized in v2 by a client advertising nothing."""
    p = await run.start(*args, store=store, sdk=False)
    reply = await p.raw_request("initialize", {"protocolVersion": 2, "info": INFO, "capabilities": {}})
    assert reply["result"]["protocolVersion"] == 2, reply
    return p


async def _new(p: Peer) -> str:
    reply = await p.raw_request("session/new", {"cwd": CWD})
    assert "result" in reply, reply
    assert "modes" not in reply["result"], reply
    return reply["result"]["sessionId"]


def _updates(run: Run, since: int, sid: str) -> List[Dict[str, Any]]:
    return run.updates(since, sid)


def _is_idle(sid: str):
    def idle(m: Any) -> bool:
        if not isinstance(m, dict) or m.get("method") != "session/update":
            return False
        params = m.get("params") or {}
        update = params.get("update") or {}
        return params.get("sessionId") == sid and update.get("sessionUpdate") == "state_update" and update.get("state") == "idle"

    return idle


async def _turn(run: Run, p: Peer, sid: str, text: str, answer: Optional[str] = None) -> Dict[str, Any]:
    """Prompts ``text`` (answering a permission request with option ``answer``); returns the turn:
    its acknowledgement, its updates up to and including the idle state, and the stop reason."""
    mark = run.mark()
    ack = await p.raw_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
    assert "result" in ack and isinstance(ack["result"].get("messageId"), str), ack
    if answer is not None:
        asked = await p.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "session/request_permission", mark)
        await p.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": answer}}})
    idle = await p.wait_for(_is_idle(sid), mark)
    updates = _updates(run, mark, sid)
    end = next(i for i, u in enumerate(updates) if u.get("sessionUpdate") == "state_update" and u.get("state") == "idle")
    assert updates[0] == {
        "sessionUpdate": "user_message",
        "messageId": ack["result"]["messageId"],
        "content": [{"type": "text", "text": text}],
    }, updates[0]
    assert updates[1] == {"sessionUpdate": "state_update", "state": "running"}, updates[1]
    return {"updates": updates[: end + 1], "stop": idle["params"]["update"].get("stopReason")}


def _texts(turn: Dict[str, Any], kind: str = "agent_message_chunk") -> List[str]:
    return [u["content"]["text"] for u in turn["updates"] if u.get("sessionUpdate") == kind]


def _of(turn: Dict[str, Any], kind: str) -> List[Dict[str, Any]]:
    return [u for u in turn["updates"] if u.get("sessionUpdate") == kind]


@scenario(not_over={HTTP: HTTP_CONNECTION})
async def v2_handshake(run: Run) -> None:
    """A client asking for 2 is answered 2, with `info` and `capabilities.session` (prompt, mcp
    stdio and http, delete, systemPrompt); a repeat is answered the same; v1-only methods are
    unknown; a client asking for 1 still gets 1."""
    p = await run.start(sdk=False)
    params = {"protocolVersion": 2, "info": INFO, "capabilities": {}}
    first = (await p.raw_request("initialize", params))["result"]
    assert first["info"]["name"] == "acp-facade-demo", first
    session = first["capabilities"]["session"]
    assert session["prompt"] == {"image": {}, "audio": {}, "embeddedContext": {}}, session
    assert session["mcp"] == {"stdio": {}, "http": {}}, session
    assert session["delete"] == {} and session["systemPrompt"] == {}, session
    assert (await p.raw_request("initialize", params))["result"] == first
    for removed in ("session/load", "session/set_mode", "authenticate"):
        assert (await p.raw_request(removed, {"sessionId": "x"}))["error"]["code"] == -32601, removed
    q = await run.start(sdk=False)
    v1 = await q.raw_request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert v1["result"]["protocolVersion"] == 1, v1


@scenario()
async def v2_prompt_lines(run: Run) -> None:
    """The prompt script in v2's terms: echo, `stream N`, `think`, `plan N` (plan_update of plan
    `plan`), `fail` (idle `error`), `read`/`write`/`run` (not supported: v2 has no client file
    system or terminals), `notice`, `subagent`, `system`."""
    p = await _start(run)
    sid = await _new(p)
    turn = await _turn(run, p, sid, "hello v2 world")
    assert turn["stop"] == "end_turn" and _texts(turn) == ["hello ", "v2 ", "world"], turn
    chunks = _of(turn, "agent_message_chunk")
    assert len({c["messageId"] for c in chunks}) == 1, chunks
    assert _of(turn, "usage_update"), turn

    turn = await _turn(run, p, sid, "stream 3")
    assert _texts(turn) == ["t1 ", "t2 ", "t3 "], turn

    turn = await _turn(run, p, sid, "think deeply")
    (thought,) = _of(turn, "agent_thought_chunk")
    (reply,) = _of(turn, "agent_message_chunk")
    assert thought["content"]["text"] == "deeply" and thought["messageId"] != reply["messageId"], turn

    turn = await _turn(run, p, sid, "plan 2")
    plans = _of(turn, "plan_update")
    assert [[e["status"] for e in u["plan"]["entries"]] for u in plans] == [
        ["pending", "pending"],
        ["completed", "pending"],
        ["completed", "completed"],
    ], plans
    assert {u["plan"]["planId"] for u in plans} == {"plan"} and not _of(turn, "plan"), plans

    turn = await _turn(run, p, sid, "fail")
    assert turn["stop"] == "error", turn

    for line, word in (("read notes.txt", "read"), ("write notes.txt hi", "write"), ("run true", "run")):
        turn = await _turn(run, p, sid, line)
        assert _texts(turn) == [f"{word}: not supported by the client"], turn

    turn = await _turn(run, p, sid, "notice heads up")
    assert _of(turn, "notice") == [{"sessionUpdate": "notice", "severity": "info", "title": "heads up"}], turn

    turn = await _turn(run, p, sid, "subagent go")
    kinds = [u["sessionUpdate"] for u in turn["updates"] if u["sessionUpdate"] in ("subagent_update", "session_message", "session_message_chunk")]
    assert kinds == ["subagent_update", "session_message", "session_message", "session_message_chunk", "subagent_update"], kinds
    assert _texts(turn) == ["subagent: done"], turn

    turn = await _turn(run, p, sid, "system")
    assert _texts(turn) == ["You are the acp-facade demo."], turn


@scenario()
async def v2_tool_and_edit(run: Run) -> None:
    """`tool NAME`: a `tool_call_update` creating the call (title and name NAME), a permission
    request with a `title` and the call as its `subject`; allowed: completed, chunk `NAME: done`.
    `edit PATH`: the diff as `changes` and a `git_patch`."""
    p = await _start(run)
    sid = await _new(p)
    mark = run.mark()
    turn = await _turn(run, p, sid, "tool grep", answer="allow_once")
    assert turn["stop"] == "end_turn" and _texts(turn) == ["grep: done"], turn
    calls = _of(turn, "tool_call_update")
    assert calls[0]["title"] == "grep" and calls[0]["name"] == "grep" and calls[-1]["status"] == "completed", calls
    assert not _of(turn, "tool_call"), turn
    (asked,) = [m for m in run.out(mark) if isinstance(m, dict) and m.get("method") == "session/request_permission"]
    assert asked["params"]["title"] == "Run grep", asked
    assert asked["params"]["subject"]["type"] == "tool_call", asked
    assert asked["params"]["subject"]["toolCall"]["toolCallId"] == calls[0]["toolCallId"], asked

    turn = await _turn(run, p, sid, "edit notes.txt")
    (diff,) = [c for u in _of(turn, "tool_call_update") for c in u.get("content") or [] if c["type"] == "diff"]
    assert diff["changes"] == [{"operation": "modify", "path": f"{CWD}/notes.txt", "fileType": "text"}], diff
    assert diff["patch"]["format"] == "git_patch" and "-old\n+new\n" in diff["patch"]["text"], diff


@scenario()
async def v2_cancel(run: Run) -> None:
    """`session/cancel` during `sleep`: the turn ends idle `cancelled`; the session goes on."""
    p = await _start(run)
    sid = await _new(p)
    mark = run.mark()
    ack = await p.raw_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "sleep 10000"}]})
    assert "result" in ack, ack
    # The first prompt's title is the last update the demo sends before it sleeps.
    await p.wait_for(
        lambda m: isinstance(m, dict) and ((m.get("params") or {}).get("update") or {}).get("sessionUpdate") == "session_info_update",
        mark,
    )
    await p.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    idle = await p.wait_for(_is_idle(sid), mark)
    assert idle["params"]["update"]["stopReason"] == "cancelled", idle
    assert (await _turn(run, p, sid, "still here"))["stop"] == "end_turn"


@scenario()
async def v2_modes_are_config_options(run: Run) -> None:
    """Modes are config options keyed `configId`; `switch MODE` sends `config_option_update` and
    no `current_mode_update`; `session/set_config_option` answers the options in v2's form."""
    p = await _start(run)
    sid = await _new(p)
    turn = await _turn(run, p, sid, "switch code")
    assert not _of(turn, "current_mode_update"), turn
    (update,) = _of(turn, "config_option_update")
    mode = next(o for o in update["configOptions"] if o["configId"] == "mode")
    assert mode["currentValue"] == "code" and "id" not in mode, mode
    reply = await p.raw_request("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "smart"})
    model = next(o for o in reply["result"]["configOptions"] if o["configId"] == "model")
    assert model["currentValue"] == "smart", reply


@scenario()
async def v2_resume_with_replay(run: Run) -> None:
    """`session/resume` with `replayFrom` start replays the history (in v2's forms, each user
    message under the id its prompt was acknowledged with), then `replay_complete`, then the
    session's state (idle), then answers; without `replayFrom` it sends only the state. Across
    processes."""
    p = await _start(run, store=run.store)
    sid = await _new(p)
    first = await _turn(run, p, sid, "hello there")
    await _turn(run, p, sid, "tool grep", answer="allow_once")
    await p.hang_up()

    q = await _start(run, store=run.store)
    mark = run.mark()
    reply = await q.raw_request("session/resume", {"sessionId": sid, "cwd": CWD, "replayFrom": {"type": "start"}})
    assert "configOptions" in reply["result"] and "modes" not in reply["result"], reply
    replayed = _updates(run, mark, sid)
    kinds = [u["sessionUpdate"] for u in replayed]
    assert kinds[-2:] == ["replay_complete", "state_update"] and replayed[-1]["state"] == "idle", kinds
    users = [u for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users[0]["messageId"] == first["updates"][0]["messageId"], (users, first["updates"][0])
    assert "tool_call" not in kinds and "tool_call_update" in kinds, kinds
    texts = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["hello there", "grep: done"], texts
    assert all(u.get("messageId") for u in replayed if u["sessionUpdate"].endswith("_chunk")), replayed
    await _turn(run, q, sid, "again")
    await q.raw_request("session/close", {"sessionId": sid})
    mark = run.mark()
    reply = await q.raw_request("session/resume", {"sessionId": sid, "cwd": CWD})
    assert "result" in reply and _updates(run, mark, sid) == [{"sessionUpdate": "state_update", "state": "idle"}], (
        reply,
        _updates(run, mark, sid),
    )
