"""docs/DEMO.md's lines that call the client — `read`, `write`, `run`, `ask` with elicitation,
`open` — and `edit` and `readloop`, against a client that really serves files and really runs
commands (``conformance.editor``), with and without each capability, with the client's errors and
with `session/cancel` while a command runs."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

from conformance.editor import work_dir
from conformance.scenario import MULTISET, scenario
from conformance.wire import Peer, Run

from .prompts import assert_usage_last, turn_kinds

EVERYTHING: Dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "elicitation": {"form": {}, "url": {}},
}
"""Every client capability of schema v1.21.0."""


def calls(run: Run, since: int) -> List[str]:
    """The agent's requests and notifications from ``since`` on, but ``session/update``."""
    return [
        m["method"]
        for m in run.out(since)
        if isinstance(m, dict) and isinstance(m.get("method"), str) and m["method"] != "session/update"
    ]


def request(run: Run, since: int, method: str) -> Dict[str, Any]:
    """The agent's first ``method`` request from ``since`` on."""
    for m in run.out(since):
        if isinstance(m, dict) and m.get("method") == method and "id" in m:
            return m
    raise AssertionError(f"no {method} request in {run.out(since)}")


async def session_in(run: Run, name: str, capabilities: Dict[str, Any]) -> "tuple[Peer, str, Any]":
    """An agent whose client advertises ``capabilities``, with a session whose cwd is a fresh
    directory ``name`` (the same path for every agent)."""
    directory = work_dir(name)
    p = await run.start(capabilities=capabilities)
    sid = await p.new_session(str(directory))
    return p, sid, directory


async def settled(run: Run, p: Peer) -> None:
    """Waits until the client has answered every request of the agent (the answers to requests
    the agent does not wait for, such as `terminal/kill`, may trail its later lines)."""
    for _ in range(200):
        asked = {str(m["id"]) for m in run.out(proc=p.index) if isinstance(m, dict) and "method" in m and "id" in m}
        answered = {
            str(e.msg["id"])
            for e in run.entries
            if e.dir == "in" and e.proc == p.index and isinstance(e.msg, dict) and "method" not in e.msg and "id" in e.msg
        }
        if asked <= answered:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the client left requests of the agent unanswered: {asked - answered}")


async def reloaded_tool_calls(run: Run, p: Peer, sid: str, directory: Any) -> List[Dict[str, Any]]:
    """Closes the session, loads it again and returns the `tool_call`s its replay sent."""
    await p.close(sid)
    mark = run.mark()
    loaded = await p.load(sid, str(directory))
    assert loaded.ok, loaded.raw
    return [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "tool_call"]


@scenario()
async def client_read(run: Run) -> None:
    """`read PATH`: `fs/read_text_file` with the path made absolute (relative ones from the
    session's cwd), the file's content as one chunk, `end_turn`; a missing file is the client's
    -32002, said as `read: error -32002 …`, and the turn still ends `end_turn`."""
    p, sid, directory = await session_in(run, "client_read", EVERYTHING)
    notes = directory / "notes.txt"
    notes.write_text("first line\nsecond line\n")
    (directory / "sub").mkdir()
    for path in (str(notes), "notes.txt", "./notes.txt", "sub/../notes.txt"):
        mark = run.mark()
        reply = await p.prompt(sid, f"read {path}")
        assert reply.stop_reason == "end_turn", (path, reply.raw)
        read = request(run, mark, "fs/read_text_file")
        expected = str(notes) if path != "sub/../notes.txt" else str(directory / "sub/../notes.txt")
        assert read["params"] == {"sessionId": sid, "path": expected}, (path, read)
        assert run.texts("agent_message_chunk", mark, sid) == ["first line\nsecond line\n"], path
        assert turn_kinds(run.kinds(mark, sid)) == ["agent_message_chunk", "usage_update"], path
        assert_usage_last(run, mark, sid, path)
    mark = run.mark()
    reply = await p.prompt(sid, "read missing.txt")
    assert reply.stop_reason == "end_turn", reply.raw
    said = run.texts("agent_message_chunk", mark, sid)
    assert len(said) == 1 and said[0].startswith("read: error -32002 Resource not found"), said
    assert_usage_last(run, mark, sid, "read missing.txt")


@scenario()
async def client_write(run: Run) -> None:
    """`write PATH TEXT…`: `fs/write_text_file` with the rest of the line (inner spacing kept),
    the file really written, chunk `write: ok`; the client's error is said as
    `write: error CODE MESSAGE` and nothing is written."""
    p, sid, directory = await session_in(run, "client_write", EVERYTHING)
    mark = run.mark()
    reply = await p.prompt(sid, "write out.txt hello  big world")
    assert reply.stop_reason == "end_turn", reply.raw
    write = request(run, mark, "fs/write_text_file")
    assert write["params"] == {"sessionId": sid, "path": str(directory / "out.txt"), "content": "hello  big world"}
    assert (directory / "out.txt").read_text() == "hello  big world"
    assert run.texts("agent_message_chunk", mark, sid) == ["write: ok"]
    assert_usage_last(run, mark, sid, "write")
    p.editor.fail_next("fs/write_text_file", -32603, "disk full")
    mark = run.mark()
    reply = await p.prompt(sid, "write other.txt x")
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["write: error -32603 disk full"]
    assert not (directory / "other.txt").exists()
    # Then a read of what was written, through the same client.
    mark = run.mark()
    assert (await p.prompt(sid, "read out.txt")).stop_reason == "end_turn"
    assert run.texts("agent_message_chunk", mark, sid) == ["hello  big world"]


@scenario()
async def client_not_advertised(run: Run) -> None:
    """A client that did not advertise what a line needs gets no request for it: the turn says
    `VERB: not supported by the client` and ends `end_turn` (the transcript-wide rules also check
    that no call outside the advertised capabilities is ever sent)."""
    cases = [
        ({}, "read a.txt", "read: not supported by the client"),
        ({"fs": {"writeTextFile": True}}, "read a.txt", "read: not supported by the client"),
        ({"fs": {"readTextFile": True}}, "write a.txt x", "write: not supported by the client"),
        ({"fs": {"readTextFile": True, "writeTextFile": True}}, "run ls", "run: not supported by the client"),
        ({"elicitation": {"form": {}}}, "open https://example.com", "open: not supported by the client"),
        ({}, "open https://example.com", "open: not supported by the client"),
        ({"terminal": True}, "readloop 3 a.txt", "readloop: not supported by the client"),
    ]
    for capabilities, prompt, said in cases:
        p, sid, _ = await session_in(run, "client_not_advertised", capabilities)
        mark = run.mark()
        reply = await p.prompt(sid, prompt)
        assert reply.stop_reason == "end_turn", (prompt, capabilities, reply.raw)
        assert calls(run, mark) == [], (prompt, capabilities)
        assert run.texts("agent_message_chunk", mark, sid) == [said], (prompt, capabilities)
        assert_usage_last(run, mark, sid, prompt)
        await p.hang_up()


@scenario()
async def client_run(run: Run) -> None:
    """`run CMD ARG…`: `terminal/create` (command, args, cwd the session's), an `execute` tool call
    `in_progress` embedding the terminal, `terminal/wait_for_exit`, `terminal/output`, the tool call
    `completed` (exit 0) or `failed`, chunk `exit: CODE`, `terminal/release`, `end_turn` — the
    command really run; a client error on create is said as `run: error CODE MESSAGE`;
    `session/load` replays the finished calls without the released terminals."""
    p, sid, directory = await session_in(run, "client_run", EVERYTHING)
    (directory / "here.txt").write_text("")
    mark = run.mark()
    reply = await p.prompt(sid, "run ls -1")
    assert reply.stop_reason == "end_turn", reply.raw
    assert calls(run, mark) == ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]
    create = request(run, mark, "terminal/create")
    assert create["params"] == {"sessionId": sid, "command": "ls", "args": ["-1"], "cwd": str(directory)}, create
    ups = turn_kinds(run.kinds(mark, sid))
    assert ups == ["tool_call", "tool_call_update", "agent_message_chunk", "usage_update"], ups
    tool = [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "tool_call"][0]
    assert tool == {
        "sessionUpdate": "tool_call",
        "toolCallId": tool["toolCallId"],
        "title": "run ls -1",
        "kind": "execute",
        "status": "in_progress",
        "content": [{"type": "terminal", "terminalId": "term-1"}],
    }, tool
    update = [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "tool_call_update"][0]
    assert update == {"sessionUpdate": "tool_call_update", "toolCallId": tool["toolCallId"], "status": "completed"}
    assert run.texts("agent_message_chunk", mark, sid) == ["exit: 0"]
    # The command really ran in the session's directory (its output is what the agent read).
    output = [
        e.msg for e in run.entries[mark:] if e.dir == "in" and isinstance(e.msg, dict) and "output" in (e.msg.get("result") or {})
    ]
    assert output and output[0]["result"]["output"] == "here.txt\n", output
    # In the order of DEMO.md: the tool call once the terminal exists, the update after its output,
    # then the exit code, then the release.
    order = [
        m["params"]["update"]["sessionUpdate"] if m.get("method") == "session/update" else m.get("method")
        for m in run.out(mark)
    ]
    order = [o for o in order if o in ("terminal/create", "tool_call", "terminal/output", "tool_call_update", "terminal/release")]
    assert order == ["terminal/create", "tool_call", "terminal/output", "tool_call_update", "terminal/release"], order
    assert p.editor.running() == [] and p.editor.reaped == ["term-1"]

    mark = run.mark()
    reply = await p.prompt(sid, "run false")
    assert reply.stop_reason == "end_turn", reply.raw
    assert [u.get("status") for u in run.updates(mark, sid) if u["sessionUpdate"] == "tool_call_update"] == ["failed"]
    assert run.texts("agent_message_chunk", mark, sid) == ["exit: 1"]
    assert p.editor.running() == []
    failed = [u for u in run.updates(mark, sid) if u["sessionUpdate"] == "tool_call"][0]["toolCallId"]

    p.editor.fail_next("terminal/create", -32000, "no shell")
    mark = run.mark()
    reply = await p.prompt(sid, "run ls")
    assert reply.stop_reason == "end_turn", reply.raw
    assert run.texts("agent_message_chunk", mark, sid) == ["run: error -32000 no shell"]
    assert calls(run, mark) == ["terminal/create"]

    # `session/load` replays both finished calls without their terminals: a terminal belongs to
    # the live turn and was released, and a loading client has no terminal of that id (Zed
    # refuses a whole tool call that names one). Nothing is asked of the client meanwhile.
    mark = run.mark()
    replayed = await reloaded_tool_calls(run, p, sid, directory)
    assert replayed == [
        {"sessionUpdate": "tool_call", "toolCallId": tool["toolCallId"], "title": "run ls -1", "kind": "execute", "status": "completed"},
        {"sessionUpdate": "tool_call", "toolCallId": failed, "title": "run false", "kind": "execute", "status": "failed"},
    ], replayed
    assert calls(run, mark) == []


@scenario(
    compare=MULTISET,
    why="the client's answers to terminal/kill and terminal/release, which the agent does not wait for, "
    "cross the agent's later lines in an order that depends on timing",
)
async def client_run_cancel(run: Run) -> None:
    """`session/cancel` while `run sleep 30` runs: the pending `terminal/wait_for_exit` is abandoned
    (`$/cancel_request`), the terminal killed and released (the process really ends), the turn
    ends `cancelled`; the session goes on."""
    p, sid, _ = await session_in(run, "client_run_cancel", EVERYTHING)
    mark = run.mark()
    prompt = p.start_prompt(sid, "run sleep 30")
    wait = await p.wait_for(lambda m: m.get("method") == "terminal/wait_for_exit", mark)
    await p.cancel(sid)
    reply = await prompt
    assert reply.stop_reason == "cancelled", reply.raw
    await settled(run, p)
    after_cancel = calls(run, mark)
    assert after_cancel == [
        "terminal/create",
        "terminal/wait_for_exit",
        "$/cancel_request",
        "terminal/kill",
        "terminal/release",
    ], after_cancel
    cancel = [m for m in run.out(mark) if m.get("method") == "$/cancel_request"][0]
    assert cancel["params"]["requestId"] == wait["id"]
    served = [method for method, _ in p.editor.served]
    assert served == ["terminal/create", "terminal/wait_for_exit", "terminal/kill", "terminal/release"], served
    assert p.editor.running() == [] and p.editor.reaped == ["term-1"], "the process was killed and reaped"
    assert "tool_call" in run.kinds(mark, sid)
    assert "usage_update" not in run.kinds(mark, sid)
    mark = run.mark()
    assert (await p.prompt(sid, "hello")).stop_reason == "end_turn"


@scenario()
async def client_ask(run: Run) -> None:
    """`ask QUESTION` with a client that advertised `elicitation.form`: `elicitation/create` in form
    mode with one required string `answer`; accept → `answer: VALUE`, decline → `declined`, both
    `end_turn`; cancel → the turn ends `cancelled`."""
    p, sid, _ = await session_in(run, "client_ask", {"elicitation": {"form": {}}})
    p.editor.elicitations.extend(
        [{"action": "accept", "content": {"answer": "blue"}}, {"action": "decline"}, {"action": "cancel"}]
    )
    mark = run.mark()
    reply = await p.prompt(sid, "ask what is your favourite colour?")
    assert reply.stop_reason == "end_turn", reply.raw
    asked = request(run, mark, "elicitation/create")
    assert asked["params"] == {
        "sessionId": sid,
        "mode": "form",
        "message": "what is your favourite colour?",
        "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
    }, asked
    assert run.texts("agent_message_chunk", mark, sid) == ["answer: blue"]
    assert_usage_last(run, mark, sid, "ask accepted")
    mark = run.mark()
    assert (await p.prompt(sid, "ask really?")).stop_reason == "end_turn"
    assert run.texts("agent_message_chunk", mark, sid) == ["declined"]
    mark = run.mark()
    assert (await p.prompt(sid, "ask still there?")).stop_reason == "cancelled"
    assert run.texts("agent_message_chunk", mark, sid) == []
    assert [e["message"] for e in p.editor.elicited] == ["what is your favourite colour?", "really?", "still there?"]


@scenario()
async def client_open(run: Run) -> None:
    """`open URL` with a client that advertised `elicitation.url`: `elicitation/create` in URL mode
    with a fresh `elicitationId`; accept → `elicitation/complete` for that id, then `opened`;
    decline → `declined`; both `end_turn`; cancel → `cancelled`."""
    p, sid, _ = await session_in(run, "client_open", {"elicitation": {"url": {}}})
    p.editor.elicitations.extend([{"action": "accept"}, {"action": "decline"}, {"action": "cancel"}])
    mark = run.mark()
    reply = await p.prompt(sid, "open https://example.com/docs")
    assert reply.stop_reason == "end_turn", reply.raw
    asked = request(run, mark, "elicitation/create")["params"]
    assert (asked["mode"], asked["url"], asked["sessionId"]) == ("url", "https://example.com/docs", sid), asked
    assert asked["message"] == "Open https://example.com/docs"
    assert calls(run, mark) == ["elicitation/create", "elicitation/complete"]
    complete = [m for m in run.out(mark) if m.get("method") == "elicitation/complete"][0]
    assert complete["params"] == {"elicitationId": asked["elicitationId"]}
    assert p.editor.completed == [asked["elicitationId"]]
    assert run.texts("agent_message_chunk", mark, sid) == ["opened"]
    first = asked["elicitationId"]
    mark = run.mark()
    assert (await p.prompt(sid, "open https://example.com/docs")).stop_reason == "end_turn"
    again = request(run, mark, "elicitation/create")["params"]
    assert again["elicitationId"] != first, "a fresh id"
    assert calls(run, mark) == ["elicitation/create"]
    assert run.texts("agent_message_chunk", mark, sid) == ["declined"]
    mark = run.mark()
    assert (await p.prompt(sid, "open https://example.com/docs")).stop_reason == "cancelled"
    assert run.texts("agent_message_chunk", mark, sid) == []


@scenario()
async def client_edit(run: Run) -> None:
    """`edit PATH`: an `edit` tool call (title `edit PATH`, `in_progress`) located at PATH line 1
    with a diff of PATH, then `completed` with `rawOutput` `{"ok": true}`, chunk `edited PATH`;
    `session/load` replays the finished call with its diff."""
    p, sid, directory = await session_in(run, "client_edit", {})
    mark = run.mark()
    reply = await p.prompt(sid, "edit src/main.rs")
    assert reply.stop_reason == "end_turn", reply.raw
    file = str(directory / "src/main.rs")
    ups = [u for u in run.updates(mark, sid) if u["sessionUpdate"] not in ("available_commands_update", "session_info_update")]
    call = ups[0]["toolCallId"]
    assert ups[:3] == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": call,
            "title": "edit src/main.rs",
            "kind": "edit",
            "status": "in_progress",
            "locations": [{"path": file, "line": 1}],
            "content": [{"type": "diff", "path": file, "oldText": "old\n", "newText": "new\n"}],
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed", "rawOutput": {"ok": True}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "edited src/main.rs"}},
    ], ups
    assert ups[3]["sessionUpdate"] == "usage_update"
    assert calls(run, mark) == []
    replayed = await reloaded_tool_calls(run, p, sid, directory)
    assert replayed == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": call,
            "title": "edit src/main.rs",
            "kind": "edit",
            "status": "completed",
            "locations": [{"path": file, "line": 1}],
            "content": [{"type": "diff", "path": file, "oldText": "old\n", "newText": "new\n"}],
            "rawOutput": {"ok": True},
        }
    ], replayed


@scenario()
async def client_readloop(run: Run) -> None:
    """`readloop N PATH` (the benchmark's helper, docs/DEMO.md): N `fs/read_text_file` of PATH one
    after the other, then chunk `readloop: N`; a failing read ends it with `readloop: error …`."""
    p, sid, directory = await session_in(run, "client_readloop", {"fs": {"readTextFile": True}})
    (directory / "a.txt").write_text("x" * 100)
    mark = run.mark()
    reply = await p.prompt(sid, "readloop 5 a.txt")
    assert reply.stop_reason == "end_turn", reply.raw
    assert calls(run, mark) == ["fs/read_text_file"] * 5
    assert run.texts("agent_message_chunk", mark, sid) == ["readloop: 5"]
    mark = run.mark()
    reply = await p.prompt(sid, "readloop 3 missing.txt")
    assert reply.stop_reason == "end_turn", reply.raw
    assert calls(run, mark) == ["fs/read_text_file"]
    said = run.texts("agent_message_chunk", mark, sid)
    assert len(said) == 1 and said[0].startswith("readloop: error -32002"), said


@scenario(compare=MULTISET, why="reads in flight together are answered by the client in any order")
async def client_readloop_parallel(run: Run) -> None:
    """`readloop N PATH PARALLEL`: at most PARALLEL reads in flight at once, N in all."""
    p, sid, directory = await session_in(run, "client_readloop_parallel", {"fs": {"readTextFile": True}})
    (directory / "a.txt").write_text("x")
    mark = run.mark()
    reply = await p.prompt(sid, "readloop 40 a.txt 8")
    assert reply.stop_reason == "end_turn", reply.raw
    assert calls(run, mark) == ["fs/read_text_file"] * 40
    assert run.texts("agent_message_chunk", mark, sid) == ["readloop: 40"]
    # Never more than 8 unanswered at once, and more than one at some point.
    pending, most = set(), 0
    for e in run.entries[mark:]:
        m = e.msg
        if e.dir == "out" and isinstance(m, dict) and m.get("method") == "fs/read_text_file":
            pending.add(str(m["id"]))
            most = max(most, len(pending))
        elif e.dir == "in" and isinstance(m, dict) and "method" not in m and "id" in m:
            pending.discard(str(m["id"]))
    assert 1 < most <= 8, most
