"""docs/DEMO.md's prompt script: stream, think, tool, sleep, ask, fail, /compact, echo; usage and titles.
The rich lines (plan, /shout, switch, mcp, non-text blocks, `_meta`, extension methods): `rich.py`."""

from __future__ import annotations

from conformance.scenario import scenario
from conformance.wire import Peer, Run


def turn_kinds(kinds):
    """Update kinds without the advertisement and the title, which only a first prompt carries."""
    return [k for k in kinds if k not in ("available_commands_update", "session_info_update")]


def assert_usage_last(run: Run, since: int, session: str, what: str) -> None:
    ups = [u for u in run.updates(since, session) if u["sessionUpdate"] not in ("available_commands_update", "session_info_update")]
    assert ups, f"{what}: no update at all"
    assert ups[-1]["sessionUpdate"] == "usage_update", f"{what}: the last update is not the usage: {ups}"
    assert ups[-1]["size"] == 200_000 and ups[-1]["used"] > 0, f"{what}: {ups[-1]}"
    assert [u["sessionUpdate"] for u in ups].count("usage_update") == 1, f"{what}: one usage_update per turn: {ups}"


@scenario()
async def stream(run: Run) -> None:
    """`stream N`: N chunks `tK ` in order, then one usage_update, then end_turn; trimmed input."""
    p = await run.start()
    sid = await p.new_session()
    for text, n in (("stream 40", 40), ("  stream 3 \n", 3), ("stream 0", 0), ("stream +2", 2), ("stream x", 0)):
        mark = run.mark()
        reply = await p.prompt(sid, text)
        assert reply.stop_reason == "end_turn", (text, reply.raw)
        assert run.texts("agent_message_chunk", mark, sid) == [f"t{i} " for i in range(1, n + 1)], text
        kinds = turn_kinds(run.kinds(mark, sid))
        assert kinds == ["agent_message_chunk"] * n + ["usage_update"], (text, kinds)
        assert_usage_last(run, mark, sid, text)


@scenario()
async def think(run: Run) -> None:
    """`think TEXT`: one agent_thought_chunk with TEXT, then an agent_message_chunk, end_turn."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    reply = await p.prompt(sid, "think about the problem")
    assert reply.stop_reason == "end_turn", reply.raw
    assert turn_kinds(run.kinds(mark, sid)) == ["agent_thought_chunk", "agent_message_chunk", "usage_update"]
    assert run.texts("agent_thought_chunk", mark, sid) == ["about the problem"]
    assert [t for t in run.texts("agent_message_chunk", mark, sid) if t]
    assert_usage_last(run, mark, sid, "think")


@scenario()
async def echo(run: Run) -> None:
    """Anything else is echoed word by word as agent_message_chunks, then end_turn."""
    p = await run.start()
    sid = await p.new_session()
    for text, words in (
        ("hello  big\tworld", ["hello", "big", "world"]),
        ("single", ["single"]),
        ("  spaced   out \n words  ", ["spaced", "out", "words"]),
        ("streaming is not stream", ["streaming", "is", "not", "stream"]),
        ("Stream 3", ["Stream", "3"]),
    ):
        mark = run.mark()
        reply = await p.prompt(sid, text)
        assert reply.stop_reason == "end_turn", reply.raw
        chunks = run.texts("agent_message_chunk", mark, sid)
        assert [c.strip() for c in chunks] == words, (text, chunks)
        assert "".join(chunks) == " ".join(words), (text, chunks)
        assert_usage_last(run, mark, sid, text)


async def _tool(run: Run, answer: str, status: str, text: str) -> Peer:
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    prompt = p.start_prompt(sid, "tool grep")
    ask = await p.permission()
    assert ask.session_id == sid
    assert ask.option_ids == ["allow_once", "allow_always", "reject_once"], ask.option_ids
    assert [o.kind for o in ask.options] == ["allow_once", "allow_always", "reject_once"]
    ask.select(answer)
    reply = await prompt
    assert reply.stop_reason == "end_turn", reply.raw
    ups = [u for u in run.updates(mark, sid) if u["sessionUpdate"] not in ("available_commands_update", "session_info_update")]
    assert [u["sessionUpdate"] for u in ups] == ["tool_call", "tool_call_update", "agent_message_chunk", "usage_update"], ups
    assert ups[0].get("status", "pending") == "pending", ups[0]
    assert ups[1]["toolCallId"] == ups[0]["toolCallId"] == ask.tool_call.tool_call_id
    assert ups[1]["status"] == status, ups[1]
    assert ups[2]["content"]["text"] == text
    # The permission request follows the tool call's announcement.
    out = run.out(mark)
    at_request = next(i for i, m in enumerate(out) if m.get("method") == "session/request_permission")
    at_call = next(i for i, m in enumerate(out) if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "tool_call")
    assert at_call < at_request
    # The session goes on.
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"
    return p


@scenario()
async def tool_allow_once(run: Run) -> None:
    """`tool NAME` allowed once: tool_call_update completed, then `NAME: done`, end_turn."""
    await _tool(run, "allow_once", "completed", "grep: done")


@scenario()
async def tool_allow_always(run: Run) -> None:
    """`tool NAME` allowed always: tool_call_update completed, then `NAME: done`, end_turn."""
    await _tool(run, "allow_always", "completed", "grep: done")


@scenario()
async def tool_reject(run: Run) -> None:
    """`tool NAME` rejected: tool_call_update failed, then `NAME: denied`, end_turn; `tool` alone
    is named `tool`."""
    p = await _tool(run, "reject_once", "failed", "grep: denied")
    sid = await p.new_session()
    mark = run.mark()
    prompt = p.start_prompt(sid, "tool")
    (await p.permission()).select("reject_once")
    assert (await prompt).stop_reason == "end_turn"
    assert run.texts("agent_message_chunk", mark, sid) == ["tool: denied"]


@scenario()
async def tool_option_not_offered(run: Run) -> None:
    """DESIGN: a chosen option that was not offered is a denial."""
    await _tool(run, "allow_forever", "failed", "grep: denied")


@scenario()
async def tool_cancelled_by_client(run: Run) -> None:
    """The client answers the permission request `cancelled` (no session/cancel): the turn ends
    `cancelled`, nothing more of the tool is said."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    prompt = p.start_prompt(sid, "tool rm")
    ask = await p.permission()
    ask.cancelled()
    reply = await prompt
    assert reply.stop_reason == "cancelled", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == []
    assert "usage_update" not in run.kinds(mark, sid)
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"


@scenario()
async def tool_session_cancel(run: Run) -> None:
    """session/cancel while a permission request is pending, then (the protocol's order) the
    client answers it `cancelled`: the prompt answers `cancelled`."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    prompt = p.start_prompt(sid, "tool rm")
    ask = await p.permission()
    await p.cancel(sid)
    ask.cancelled()
    reply = await prompt
    assert reply.stop_reason == "cancelled", reply.raw
    assert not [t for t in run.texts("agent_message_chunk", mark, sid) if "rm: done" in t]
    assert (await p.prompt(sid, "stream 1")).stop_reason == "end_turn"


@scenario()
async def sleep(run: Run) -> None:
    """`sleep MS`: waits, then `slept`, end_turn."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    reply = await p.prompt(sid, "sleep 30")
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["slept"]
    assert_usage_last(run, mark, sid, "sleep")


@scenario()
async def sleep_cancel(run: Run) -> None:
    """`sleep MS` then session/cancel: the prompt answers `cancelled` at once (an hour's sleep)."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    prompt = p.start_prompt(sid, "sleep 3600000", timeout=5)
    await p.expect_silence(0.2)
    await p.cancel(sid)
    reply = await prompt
    assert reply.stop_reason == "cancelled", reply.raw
    assert run.updates(mark, sid) == []
    # The session goes on.
    assert (await p.prompt(sid, "sleep 1")).stop_reason == "end_turn"


@scenario()
async def ask_cancel(run: Run) -> None:
    """`ask QUESTION`: nothing is sent (no ACP form, never a permission request) and the turn waits
    until session/cancel; other requests are served meanwhile."""
    p = await run.start()
    sid = await p.new_session()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    mark = run.mark()
    prompt = p.start_prompt(sid, "ask what is your favourite colour?", timeout=5)
    await p.expect_silence(0.2)
    listed = await p.list()
    assert [s["sessionId"] for s in listed.result["sessions"]] == [sid]
    await p.expect_silence(0.1)
    await p.cancel(sid)
    reply = await prompt
    assert reply.stop_reason == "cancelled", reply.raw
    assert run.updates(mark, sid) == []
    assert not [m for m in run.out(mark) if m.get("method") == "session/request_permission"]


@scenario()
async def fail(run: Run) -> None:
    """`fail`: session/prompt answers -32603 with a message; the session and agent go on."""
    p = await run.start()
    sid = await p.new_session()
    reply = await p.prompt(sid, "fail")
    assert reply.code == -32603, reply.raw
    assert reply.error["message"], reply.raw
    assert (await p.prompt(sid, "stream 2")).stop_reason == "end_turn"
    reply = await p.prompt(sid, "  fail  ")
    assert reply.code == -32603, reply.raw


@scenario()
async def compact(run: Run) -> None:
    """`/compact`: advertised as `compact` in available_commands_update (once per session, on its
    first prompt, first, beside the host's `shout`); the prompt ends end_turn; also as a session's
    very first prompt."""
    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"
    adverts = [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "available_commands_update"]
    assert len(adverts) == 1, adverts
    assert [c["name"] for c in adverts[0]["availableCommands"]] == ["compact", "shout"]
    for _ in range(2):
        mark = run.mark()
        reply = await p.prompt(sid, "/compact")
        assert reply.stop_reason == "end_turn", reply.raw
        assert "available_commands_update" not in run.kinds(mark, sid)
    # Exactly `/compact` (after trimming) is the command; anything else is a prompt like any other.
    for text, compacts in (("  /compact \n", True), ("/compact now", False), ("/COMPACT", False), ("/compactify", False)):
        mark = run.mark()
        assert (await p.prompt(sid, text)).stop_reason == "end_turn", text
        assert ("usage_update" not in run.kinds(mark, sid)) == compacts, (text, run.kinds(mark, sid))
    other = await p.new_session()
    mark = run.mark()
    assert (await p.prompt(other, "/compact")).stop_reason == "end_turn"
    assert run.kinds(mark, other).count("available_commands_update") == 1
    assert sum(1 for u in run.updates() if u["sessionUpdate"] == "available_commands_update") == 2


@scenario()
async def titles(run: Run) -> None:
    """A session's title is its first prompt's first 40 characters (trimmed), announced once with
    session_info_update, and listed; counted in characters, not bytes."""
    p = await run.start()
    sid = await p.new_session()
    first = "   Please refactor the parser module so that it streams its input   "
    mark = run.mark()
    assert (await p.prompt(sid, first)).stop_reason == "end_turn"
    infos = [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "session_info_update"]
    assert len(infos) == 1, infos
    assert infos[0]["title"] == first.strip()[:40]
    mark = run.mark()
    assert (await p.prompt(sid, "and another thing")).stop_reason == "end_turn"
    assert "session_info_update" not in run.kinds(mark, sid)
    # Multi-byte characters (two-byte, three-byte, four-byte): 40 characters.
    wide = await p.new_session()
    text = "héllo wörld ✓ 🚀🚀 naïve café — ünïcödé façade ℵ 🎉 end"
    mark = run.mark()
    assert (await p.prompt(wide, text)).stop_reason == "end_turn"
    infos = [u for u in run.updates(mark, wide) if u["sessionUpdate"] == "session_info_update"]
    assert [i["title"] for i in infos] == [text[:40]], infos
    listed = {s["sessionId"]: s for s in (await p.list()).result["sessions"]}
    assert listed[sid]["title"] == first.strip()[:40]
    assert listed[wide]["title"] == text[:40]
    assert listed[sid]["updatedAt"]


@scenario()
async def unicode_whitespace(run: Run) -> None:
    """"Trimmed" and "word by word" as the Rust demo does it (Unicode White_Space): a command
    surrounded by NBSP / ideographic space / NEL still runs, words split on them; U+FEFF is not
    whitespace."""
    p = await run.start()
    sid = await p.new_session()
    for text, chunks in (
        ("\u00a0stream 2\u3000", ["t1 ", "t2 "]),
        ("\u0085stream 1\u0085", ["t1 "]),
        ("stream\u00a02", ["t1 ", "t2 "]),
        ("echo\u00a0these\u2003words\u2028", ["echo ", "these ", "words"]),
        ("\ufeffstream 1", ["\ufeffstream ", "1"]),
    ):
        mark = run.mark()
        reply = await p.prompt(sid, text)
        assert reply.stop_reason == "end_turn", (text, reply.raw)
        assert run.texts("agent_message_chunk", mark, sid) == chunks, (text, run.texts("agent_message_chunk", mark, sid))


@scenario()
async def numbers(run: Run) -> None:
    """Numeric arguments parse as an unsigned 64-bit number or count as 0: `stream -1`,
    `stream 1.5`, `stream 18446744073709551616` (2^64) stream nothing; `sleep 2^64` does not wait."""
    p = await run.start()
    sid = await p.new_session()
    for text in ("stream -1", "stream 1.5", "stream 18446744073709551616", "stream 0x10", "stream ３"):
        mark = run.mark()
        reply = await p.prompt(sid, text, timeout=5)
        assert reply.stop_reason == "end_turn", (text, reply.raw)
        assert run.texts("agent_message_chunk", mark, sid) == [], text
    mark = run.mark()
    reply = await p.prompt(sid, "sleep 18446744073709551616", timeout=5)
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["slept"]


@scenario()
async def prompt_without_text(run: Run) -> None:
    """The first block decides: a resource link first is answered `link URI` whatever text follows
    (rich.py has the other kinds); a prompt with no block at all is an empty echo (end_turn)."""
    from acp import resource_link_block, text_block

    p = await run.start()
    sid = await p.new_session()
    mark = run.mark()
    reply = await p.prompt_blocks(sid, [resource_link_block("x.txt", "file:///tmp/x.txt"), text_block("stream 2")])
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["link file:///tmp/x.txt"]
    assert_usage_last(run, mark, sid, "a link first")
    mark = run.mark()
    reply = await p.prompt_blocks(sid, [resource_link_block("y.txt", "file:///tmp/y.txt")])
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["link file:///tmp/y.txt"]
    mark = run.mark()
    reply = await p.prompt_blocks(sid, [])
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == []
