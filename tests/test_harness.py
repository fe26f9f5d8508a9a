"""The harness checks itself: a schema violation, a broken transcript rule and a wire difference
are each caught, and normalisation only hides what legitimately varies."""

from __future__ import annotations

import json

from conformance import invariants
from conformance.normalize import difference, normalise
from conformance.schema import V1, check_agent_message, check_agent_message_v2, id_key
from conformance.wire import Entry


def entry(direction: str, message, proc: int = 1) -> Entry:
    return Entry(direction, proc, json.dumps(message), message)


def update(session: str, kind: str, **fields):
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": {"sessionUpdate": kind, **fields}}}


def prompt(request_id: int, session: str, text: str):
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}


def test_the_schema_says_what_an_agent_sends() -> None:
    # Read from the generated schema (x-method): a regenerated schema that drops or renames one
    # of these fails here.
    assert V1.agent_requests == {
        "session/request_permission": "RequestPermissionRequest",
        "fs/read_text_file": "ReadTextFileRequest",
        "fs/write_text_file": "WriteTextFileRequest",
        "terminal/create": "CreateTerminalRequest",
        "terminal/output": "TerminalOutputRequest",
        "terminal/wait_for_exit": "WaitForTerminalExitRequest",
        "terminal/kill": "KillTerminalRequest",
        "terminal/release": "ReleaseTerminalRequest",
        "elicitation/create": "CreateElicitationRequest",
    }
    assert V1.agent_notifications == {
        "session/update": "SessionNotification",
        "$/cancel_request": "CancelRequestNotification",
        "elicitation/complete": "CompleteElicitationNotification",
    }
    assert V1.responses == {
        "initialize": "InitializeResponse",
        "authenticate": "AuthenticateResponse",
        "logout": "LogoutResponse",
        "session/new": "NewSessionResponse",
        "session/load": "LoadSessionResponse",
        "session/resume": "ResumeSessionResponse",
        "session/list": "ListSessionsResponse",
        "session/delete": "DeleteSessionResponse",
        "session/close": "CloseSessionResponse",
        "session/set_mode": "SetSessionModeResponse",
        "session/set_config_option": "SetSessionConfigOptionResponse",
        "session/prompt": "PromptResponse",
    }


def test_the_v2_schema_is_checked_as_v2() -> None:
    text = {"type": "text", "text": "hi"}
    assert check_agent_message_v2(update("s", "agent_message_chunk", messageId="m1", content=text), {}) == []
    assert check_agent_message_v2(update("s", "agent_message_chunk", content=text), {}), "v2 chunks carry a messageId"
    asked = {id_key(1): ["session/prompt"]}
    assert check_agent_message_v2({"jsonrpc": "2.0", "id": 1, "result": {"messageId": "m1"}}, asked) == []
    asked = {id_key(1): ["session/prompt"]}
    assert check_agent_message_v2({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}, asked)


def test_schema_violations_are_caught() -> None:
    asked = {id_key(1): ["session/prompt"]}
    assert check_agent_message({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}, asked) == []
    asked = {id_key(1): ["session/prompt"]}
    assert check_agent_message({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "finished"}}, asked)
    assert check_agent_message(update("s", "agent_message_chunk", content={"type": "text"}), {})
    assert check_agent_message({"jsonrpc": "2.0", "id": 9, "result": {}}, {}), "a result for an id never used"
    assert check_agent_message({"jsonrpc": "2.0", "method": "fs/read_text_file", "id": 3, "params": {}}, {})
    assert check_agent_message({"jsonrpc": "2.0", "id": None, "error": {"code": "x", "message": "m"}}, {})


def test_transcript_rules_are_caught() -> None:
    good = [
        entry("in", prompt(1, "s", "hi")),
        entry("out", update("s", "agent_message_chunk", content={"type": "text", "text": "hi"})),
        entry("out", update("s", "usage_update", used=4, size=10)),
        entry("out", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}),
    ]
    assert invariants.check(good) == []
    no_usage = [good[0], good[1], good[3]]
    assert any("usage_update" in p for p in invariants.check(no_usage))
    late = good + [entry("out", update("s", "agent_message_chunk", content={"type": "text", "text": "late"}))]
    assert any("no request for its session in flight" in p for p in invariants.check(late))
    unanswered = good + [entry("in", prompt(2, "s", "again"))]
    assert any("1 request(s), 0 response(s)" in p for p in invariants.check(unanswered))
    unsorted = [
        entry("in", {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}}),
        entry("out", {"jsonrpc": "2.0", "id": 3, "result": {"sessions": [{"sessionId": "b", "cwd": "/"}, {"sessionId": "a", "cwd": "/"}]}}),
    ]
    assert any("not sorted" in p for p in invariants.check(unsorted))


def test_a_repeat_of_an_answered_idempotency_key_runs_no_turn_and_needs_no_usage() -> None:
    def keyed(request_id: int, key: str):
        message = prompt(request_id, "s", "hi")
        message["params"]["_meta"] = {"acp/idempotencyKey": key}
        return message

    first = [
        entry("in", keyed(1, "k")),
        entry("out", update("s", "usage_update", used=4, size=10)),
        entry("out", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}),
    ]
    repeat = [entry("in", keyed(2, "k")), entry("out", {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})]
    assert invariants.check(first + repeat) == []
    # Another key, or the same key on no earlier answer, runs a turn: its usage is still required.
    other = [entry("in", keyed(2, "other")), repeat[1]]
    assert any("usage_update" in p for p in invariants.check(first + other))
    assert any("usage_update" in p for p in invariants.check(repeat))


def test_normalisation_hides_ids_and_times_only() -> None:
    def run(session: str, tool: str, cursor: str, time: str, text: str):
        return [
            entry("in", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
            entry("out", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}}),
            entry("out", update(session, "tool_call", toolCallId=tool, title="x")),
            entry("out", update(session, "session_info_update", title="t", updatedAt=time)),
            entry("in", {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"cursor": cursor}}),
            entry("out", {"jsonrpc": "2.0", "id": 2, "error": {"code": -32002, "message": f"session not found: {session} at {time}"}}),
            entry("out", update(session, "agent_message_chunk", content={"type": "text", "text": text})),
        ]

    a = normalise(run("sess_aaaaaaaa1", "call_1", "c1", "2026-01-01T00:00:00.000Z", "same"))
    b = normalise(run("sess_bbbbbbbb2", "call_9", "c2", "2027-02-02T10:11:12Z", "same"))
    assert a == b
    assert "sess_" not in "".join(a) and "2026" not in "".join(a)
    c = normalise(run("sess_bbbbbbbb2", "call_9", "c2", "2027-02-02T10:11:12Z", "other"))
    diff = difference("rust", a, "node", c, multiset=False)
    assert '-← p1' in diff and '"other"' in diff
    # Client-invented ids are not hidden: two agents must answer them identically.
    unknown = [
        entry("in", {"jsonrpc": "2.0", "id": 1, "method": "session/close", "params": {"sessionId": "nope-1"}}),
        entry("out", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "session not found: nope-1"}}),
    ]
    assert "nope-1" in "".join(normalise(unknown))


def test_normalisation_leaves_out_stream_cursors_only() -> None:
    plain = update("s", "agent_message_chunk", content={"type": "text", "text": "a"})
    stamped = json.loads(json.dumps(plain))
    stamped["params"]["_meta"] = {"acp/cursor": "17"}
    assert normalise([entry("out", stamped)]) == normalise([entry("out", plain)])
    kept = json.loads(json.dumps(plain))
    kept["params"]["_meta"] = {"acp/cursor": "17", "other": 1}
    assert '"other": 1' in normalise([entry("out", kept)])[0]
    assert "acp/cursor" not in normalise([entry("out", kept)])[0]


def test_multiset_ignores_order_only() -> None:
    a, b = ["x", "y", "y"], ["y", "x", "y"]
    assert difference("rust", a, "python", b, multiset=True) == ""
    assert difference("rust", a, "python", b, multiset=False) != ""
    assert difference("rust", a, "python", ["x", "y"], multiset=True) != ""


# ---- the remote transports (conformance/remote.py, remote-relay/relay.mjs) ---------------------


def _listen(tmp_path, script: str):
    import asyncio
    import sys

    from conformance.remote import listen

    return asyncio.run(
        listen("fake", [sys.executable, "-c", script], {}, tmp_path, tmp_path / "err.txt", tmp_path / "out.txt", 10.0)
    )


def test_an_agent_without_listen_fails_saying_so(tmp_path) -> None:
    import pytest

    from conformance.remote import NotListening

    rejecting = "import sys; sys.stderr.write('unknown option: --listen\\n'); sys.exit(2)"
    with pytest.raises(NotListening, match=r"the fake demo does not support --listen: .*unknown option: --listen"):
        _listen(tmp_path, rejecting)
    # Its stderr is kept with the run's files all the same.
    assert (tmp_path / "err.txt").read_text() == "unknown option: --listen\n"
    crashing = "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"
    with pytest.raises(NotListening, match=r"exited with status 3 before printing .*boom"):
        _listen(tmp_path, crashing)


def test_the_listening_line_gives_the_url(tmp_path) -> None:
    import asyncio

    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
        "print('a stray line'); sys.stdout.flush()\n"
        "sys.stderr.write('starting\\nlistening on http://127.0.0.1:4321/acp\\n'); sys.stderr.flush()\n"
        "time.sleep(60)\n"
    )
    problems: list = []

    async def run() -> int:
        import sys

        from conformance.remote import listen

        agent = await listen("fake", [sys.executable, "-c", script], {}, tmp_path, tmp_path / "e", tmp_path / "o", 10.0)
        assert agent.url == "http://127.0.0.1:4321/acp"
        return await agent.stop(problems, 1)

    # SIGTERM's exit status is returned; a byte on stdout while listening is a problem.
    assert asyncio.run(run()) == 0
    assert problems == ["p1: the listening agent wrote to stdout: b'a stray line\\n'"], problems


def test_the_relay_reports_a_refused_connection(tmp_path) -> None:
    import socket
    import subprocess

    import pytest

    from conformance.remote import HTTP, WS, locate

    relay = next(t for t in locate() if t.name == HTTP).relay
    if relay is None:
        pytest.skip("the relay cannot run here (node, or npm ci in tests/remote-relay)")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}) + "\n"
    for transport in (HTTP, WS):
        done = subprocess.run(
            [*relay, transport, f"http://127.0.0.1:{port}/acp"], input=line, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1, (transport, done)
        assert done.stdout == "", (transport, done.stdout)
        assert done.stderr.startswith(f"relay ({transport}): "), (transport, done.stderr)
