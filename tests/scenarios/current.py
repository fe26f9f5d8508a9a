"""docs/DEMO.md's lines for the newest stable v1 features (schema crate 1.20): `notice TEXT`,
`system` with the client's system prompt kept across processes, `subagent TEXT`, the tool call's
`name`, `/compact` reported to a client that opted in, `plan N` as plans with ids, `drip N MS`.

Each runs with a client that advertises the feature's capability and one that does not: the
demo sends the new updates only to the first (the invariants check it for every transcript) and
degrades for the second. The capabilities are sent raw: the official Python client predates them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from conformance.scenario import scenario
from conformance.wire import CWD, Peer, Run

from .prompts import assert_usage_last

EVERYTHING = {"session": {"notices": {}, "compaction": {}}, "subagents": {}, "plan": {}}
"""Every client capability that gates one of the features."""

OWN_PROMPT = "You are the acp-facade demo."


async def _start(run: Run, capabilities: Dict[str, Any], store: Optional[str] = ":memory:") -> Peer:
    """An agent initialized by a client advertising exactly ``capabilities``."""
    p = await run.start(store=store, initialize=False)
    reply = await p.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    assert reply.ok, reply.raw
    return p


def _kinds(run: Run, since: int, sid: str) -> List[str]:
    return [u["sessionUpdate"] for u in run.updates(since, sid)]


def _of_kind(run: Run, since: int, sid: str, kind: str) -> List[Dict[str, Any]]:
    return [u for u in run.updates(since, sid) if u["sessionUpdate"] == kind]


async def _turn(run: Run, p: Peer, sid: str, text: str, chunks: List[str]) -> int:
    """Prompts ``text``; asserts it ended end_turn with exactly ``chunks`` and a usage last.
    Returns the mark before it."""
    mark = run.mark()
    reply = await p.prompt(sid, text)
    assert reply.stop_reason == "end_turn", (text, reply.raw)
    assert run.texts("agent_message_chunk", mark, sid) == chunks, (text, run.texts("agent_message_chunk", mark, sid))
    assert_usage_last(run, mark, sid, text)
    return mark


@scenario()
async def current_capabilities(run: Run) -> None:
    """initialize advertises `sessionCapabilities.systemPrompt` (the demo takes the client's
    system prompt), whatever the client advertised."""
    for capabilities in (EVERYTHING, {}):
        p = await run.start(initialize=False)
        caps = (await p.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})).result
        assert caps["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {}, caps
        await p.hang_up()


@scenario()
async def notice(run: Run) -> None:
    """`notice TEXT`: a `notice` update (severity info, title TEXT) to a client that advertised
    `session.notices`; the chunk `notice: TEXT` to one that did not. Not replayed by a load."""
    p = await _start(run, EVERYTHING, store=run.store)
    sid = await p.new_session()
    mark = await _turn(run, p, sid, "notice disk almost full", [])
    assert _of_kind(run, mark, sid, "notice") == [
        {"sessionUpdate": "notice", "severity": "info", "title": "disk almost full"}
    ], run.updates(mark, sid)
    await p.request("session/close", {"sessionId": sid})
    mark = run.mark()
    assert (await p.load(sid)).ok
    assert not _of_kind(run, mark, sid, "notice")

    q = await _start(run, {"session": {"compaction": {}}})
    sid = await q.new_session()
    mark = await _turn(run, q, sid, "notice disk almost full", ["notice: disk almost full"])
    assert not _of_kind(run, mark, sid, "notice")


def _system_prompt(mode: str, text: str) -> Dict[str, Any]:
    return {"mode": mode, "content": [{"type": "text", "text": text}]}


@scenario()
async def system_prompt(run: Run) -> None:
    """`system`: the demo's own prompt; with the client's `systemPrompt` on session/new, `append`
    adds a newline and its text. Kept with the session: a load in another process without one
    sees it, a resume with an `override` replaces it, and a later load keeps the override."""
    p = await _start(run, {}, store=run.store)
    plain = await p.new_session()
    await _turn(run, p, plain, "system", [OWN_PROMPT])
    reply = await p.request(
        "session/new", {"cwd": CWD, "mcpServers": [], "systemPrompt": _system_prompt("append", "Be brief.")}
    )
    assert reply.ok, reply.raw
    sid = reply.result["sessionId"]
    await _turn(run, p, sid, "system", [f"{OWN_PROMPT}\nBe brief."])
    await p.hang_up()

    q = await _start(run, {}, store=run.store)
    assert (await q.load(sid)).ok
    await _turn(run, q, sid, "system", [f"{OWN_PROMPT}\nBe brief."])
    await q.hang_up()

    r = await _start(run, {}, store=run.store)
    reply = await r.request(
        "session/resume",
        {"sessionId": sid, "cwd": CWD, "mcpServers": [], "systemPrompt": _system_prompt("override", "Only this.")},
    )
    assert reply.ok, reply.raw
    await _turn(run, r, sid, "system", ["Only this."])
    await r.hang_up()

    s = await _start(run, {}, store=run.store)
    assert (await s.load(sid)).ok
    await _turn(run, s, sid, "system", ["Only this."])


@scenario()
async def subagent(run: Run) -> None:
    """`subagent TEXT` to a client that advertised `subagents`: `subagent_update` announcing a
    child, a `session_message` from the session to the child carrying TEXT, the child's reply (a
    `session_message` from it, TEXT word by word in `session_message_chunk`s), a last
    `subagent_update` idle with `end_turn`; chunk `subagent: done`. A load replays the exchange.
    To any other client: chunk `subagent: TEXT`."""
    p = await _start(run, EVERYTHING, store=run.store)
    sid = await p.new_session()
    mark = await _turn(run, p, sid, "subagent look around", ["subagent: done"])
    exchange = [u for u in run.updates(mark, sid) if u["sessionUpdate"] in _EXCHANGE]
    assert [u["sessionUpdate"] for u in exchange] == [
        "subagent_update",
        "session_message",
        "session_message",
        "session_message_chunk",
        "session_message_chunk",
        "subagent_update",
    ], exchange
    child = exchange[0]["sessionId"]
    assert child != sid and exchange[0]["title"] == "subagent", exchange[0]
    sent, reply = exchange[1], exchange[2]
    assert (sent["senderSessionId"], sent["recipientSessionId"]) == (sid, child), sent
    assert sent["content"] == [{"type": "text", "text": "look around"}], sent
    assert (reply["senderSessionId"], reply["recipientSessionId"]) == (child, sid), reply
    assert [c["content"]["text"] for c in exchange[3:5]] == ["look ", "around"], exchange
    assert all(c["messageId"] == reply["messageId"] for c in exchange[3:5]), exchange
    assert exchange[5]["state"] == {"state": "idle", "stopReason": "end_turn"}, exchange[5]
    await p.request("session/close", {"sessionId": sid})
    mark = run.mark()
    assert (await p.load(sid)).ok
    assert [u for u in run.updates(mark, sid) if u["sessionUpdate"] in _EXCHANGE] == exchange

    q = await _start(run, {"plan": {}})
    sid = await q.new_session()
    mark = await _turn(run, q, sid, "subagent look around", ["subagent: look around"])
    assert not [k for k in _kinds(run, mark, sid) if k in _EXCHANGE]


_EXCHANGE = ("subagent_update", "session_message", "session_message_chunk")


@scenario()
async def tool_name(run: Run) -> None:
    """`tool NAME`: the `tool_call` carries `name` NAME beside its title, and so does the
    permission request's tool call."""
    p = await _start(run, {})
    sid = await p.new_session()
    mark = run.mark()
    task = p.start_prompt(sid, "tool grep")
    ask = await p.permission()
    ask.select("allow_once")
    assert (await task).stop_reason == "end_turn"
    asked = [m for m in run.out(mark) if isinstance(m, dict) and m.get("method") == "session/request_permission"]
    assert [m["params"]["toolCall"].get("name") for m in asked] == ["grep"], asked
    calls = _of_kind(run, mark, sid, "tool_call")
    assert [(c["title"], c.get("name")) for c in calls] == [("grep", "grep")], calls


@scenario()
async def compaction_reports(run: Run) -> None:
    """`/compact` to a client that advertised `session.compaction`: `compaction_update` in
    progress, the summary as `compaction_summary_chunk`, `compaction_update` completed, all before
    `end_turn`; to any other client only `end_turn`."""
    p = await _start(run, EVERYTHING)
    sid = await p.new_session()
    mark = run.mark()
    assert (await p.prompt(sid, "/compact")).stop_reason == "end_turn"
    reports = [u for u in run.updates(mark, sid) if u["sessionUpdate"].startswith("compaction")]
    assert [(u["sessionUpdate"], u.get("status")) for u in reports] == [
        ("compaction_update", "in_progress"),
        ("compaction_summary_chunk", None),
        ("compaction_update", "completed"),
    ], reports
    assert len({u["compactionId"] for u in reports}) == 1, reports
    assert reports[1]["content"] == {"type": "text", "text": "The conversation so far, compacted."}, reports

    q = await _start(run, {"session": {"notices": {}}})
    sid = await q.new_session()
    mark = run.mark()
    assert (await q.prompt(sid, "/compact")).stop_reason == "end_turn"
    assert not [k for k in _kinds(run, mark, sid) if k.startswith("compaction")]


@scenario()
async def plan_operations(run: Run) -> None:
    """`plan N` to a client that advertised `plan`: one `plan_update` creating a plan with an id
    (N pending entries), then one per step replacing it, N + 1 in all, and no whole `plan`. A
    load replays its latest form once."""
    p = await _start(run, EVERYTHING, store=run.store)
    sid = await p.new_session()
    mark = await _turn(run, p, sid, "plan 2", ["planned"])
    updates = _of_kind(run, mark, sid, "plan_update")
    assert not _of_kind(run, mark, sid, "plan")
    assert len(updates) == 3, updates
    assert len({u["plan"]["planId"] for u in updates}) == 1, updates
    assert [[e["status"] for e in u["plan"]["entries"]] for u in updates] == [
        ["pending", "pending"],
        ["completed", "pending"],
        ["completed", "completed"],
    ], updates
    assert all(u["plan"]["type"] == "items" for u in updates), updates
    await p.request("session/close", {"sessionId": sid})
    mark = run.mark()
    assert (await p.load(sid)).ok
    assert _of_kind(run, mark, sid, "plan_update") == [updates[-1]]


@scenario()
async def drip(run: Run) -> None:
    """`drip N MS`: chunks `d1 ` … `dN `, one every MS milliseconds, then `end_turn`."""
    import time

    p = await _start(run, {})
    sid = await p.new_session()
    started = time.monotonic()
    await _turn(run, p, sid, "drip 3 100", ["d1 ", "d2 ", "d3 "])
    assert time.monotonic() - started >= 0.3, "three chunks, one every 100 ms"
    await _turn(run, p, sid, "  drip 2 5 \n", ["d1 ", "d2 "])


@scenario()
async def drip_cancel(run: Run) -> None:
    """`session/cancel` mid-drip ends the turn `cancelled` at once: the chunks sent so far, no
    more, no usage; the session goes on."""
    p = await _start(run, {})
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    # A chunk every half second: the cancel comes long before a third.
    prompt = p.start_prompt(sid, "drip 1000 500", timeout=10)
    await p.wait_for(lambda m: m["params"]["update"]["content"]["text"] == "d2 ", since=mark)
    await p.cancel(sid)
    reply = await prompt
    assert reply.stop_reason == "cancelled", reply.raw
    assert _kinds(run, mark, sid) == ["agent_message_chunk", "agent_message_chunk"], run.updates(mark, sid)
    assert run.texts("agent_message_chunk", mark, sid) == ["d1 ", "d2 "]
    await p.expect_silence(0.7)
    await _turn(run, p, sid, "drip 1 1", ["d1 "])


@scenario()
async def drip_numbers(run: Run) -> None:
    """`drip`'s numbers are read as `stream`'s and `sleep`'s: an unsigned 64-bit number, anything
    else 0 (a missing MS is 0). No chunks for N 0; an MS of 0 (2^64, `x`) does not wait."""
    p = await _start(run, {})
    sid = await p.new_session()
    for text in ("drip", "drip 0 5", "drip -1 5", "drip x 5", "drip 1.5 5", "drip 18446744073709551616 5"):
        mark = run.mark()
        reply = await p.prompt(sid, text, timeout=5)
        assert reply.stop_reason == "end_turn", (text, reply.raw)
        assert run.texts("agent_message_chunk", mark, sid) == [], text
    for text in ("drip 2", "drip 2 x", "drip 2 18446744073709551616", "drip 2 0 ignored"):
        await _turn(run, p, sid, text, ["d1 ", "d2 "])
