"""The model-backed example agents (Rust ``examples/model-agent``, ``examples/python/model_agent.py``,
``examples/node/model_agent.mjs``), each a subprocess over stdio driven by the official ACP Python
client (the conformance suite's ``Run``/``Peer``, whose editor really reads and writes files and
runs terminals), against the scripted model server ``mock_server.MockModel``.

Each test runs once per agent. What the agent sends the model is asserted from the requests the
mock recorded; what the editor sees, from the transcript (left in target/model-agents/<test>/
<agent>/transcript.jsonl with the agents' stderr). Every agent message is also checked against the
ACP schema as it arrives (``Run``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, Iterator, List

import pytest

from conformance.agents import ROOT, Agent, required
from conformance.editor import work_dir
from conformance.wire import Peer, Run, is_update

from .agents import locate
from .mock_server import MockModel, cut, failing, http_error, malformed, reasoning, reply, slow, text, tool_call

OUT = ROOT / "target" / "model-agents"
AGENTS = locate()
CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
MODEL = "mock-model"


@pytest.fixture(params=AGENTS, ids=[a.name for a in AGENTS])
def agent(request: pytest.FixtureRequest) -> Agent:
    found: Agent = request.param
    if not found.available:
        if found.name in required():
            pytest.fail(f"the {found.name} model agent is required but not available: {found.missing}", pytrace=False)
        pytest.skip(f"{found.name} model agent not available: {found.missing}")
    return found


@pytest.fixture
def mock() -> Iterator[MockModel]:
    with MockModel() as model:
        yield model


class Scene:
    """One test against one agent: the run, the mock model, the session's directory."""

    def __init__(self, run: Run, mock: MockModel, cwd: Path) -> None:
        self.run, self.mock, self.cwd = run, mock, cwd

    async def start(self, **env: str) -> Peer:
        """An agent process on the run's SQLite file, talking to the mock (``env`` overrides)."""
        variables = {
            "OPENAI_BASE_URL": self.mock.base_url,
            "OPENAI_MODEL": MODEL,
            "OPENAI_API_KEY": "sk-test",
            "MODEL_AGENT_STORE": self.run.store,
        }
        variables.update(env)
        return await self.run.start(store=None, env=variables, capabilities=CAPABILITIES)

    def requests_to_client(self, method: str) -> List[Dict[str, Any]]:
        """The params of every request the agent sent the client with ``method``."""
        return [m["params"] for m in self.run.out() if isinstance(m, dict) and m.get("method") == method]

    def tool_updates(self) -> List[Dict[str, Any]]:
        return [u for u in self.run.updates() if u.get("sessionUpdate") in ("tool_call", "tool_call_update")]

    def answer(self, since: int = 0) -> str:
        return "".join(self.run.texts("agent_message_chunk", since))


def drive(agent: Agent, mock: MockModel, name: str, body: Callable[[Scene], Awaitable[None]]) -> None:
    """Runs ``body`` against ``agent``; fails on its assertions or on any transcript violation."""
    directory = OUT / name / agent.name
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    cwd = work_dir(f"model-{name}-{agent.name}")

    async def main() -> Run:
        run = Run(agent, directory)
        try:
            await body(Scene(run, mock, cwd))
            await run.finish()
        except BaseException:
            await run.abort()
            (directory / "transcript.jsonl").write_text(run.dump())
            raise
        return run

    run = asyncio.run(main())
    (directory / "transcript.jsonl").write_text(run.dump())
    assert not run.violations, "\n".join(run.violations)


def option(ask: Any, kind: str) -> str:
    """The id of the permission option of ``kind`` (``allow_once``, ``reject_once``)."""
    return next(o.option_id for o in ask.options if o.kind == kind)


def tool_message(request: Any, call_id: str) -> str:
    """The content of the ``tool`` message answering ``call_id`` in a recorded request."""
    found = [m for m in request.messages if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
    assert len(found) == 1, request.messages
    return str(found[0]["content"])


# ---- the scenarios ---------------------------------------------------------------------------------


def test_streams_a_plain_answer(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        mock.script(reply(reasoning("The user greets me."), text("Hello"), text(", "), text("world.")))
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        response = await peer.prompt(session, "Say hello")
        assert response.stop_reason == "end_turn", response.raw
        assert s.run.texts("agent_message_chunk") == ["Hello", ", ", "world."]
        assert s.run.texts("agent_thought_chunk") == ["The user greets me."]
        (request,) = mock.requests
        assert request.path == "/v1/chat/completions"
        assert request.headers.get("authorization") == "Bearer sk-test"
        assert request.body["model"] == MODEL and request.body["stream"] is True
        assert {t["function"]["name"] for t in request.body["tools"]} == {
            "read_file",
            "write_file",
            "edit_file",
            "run_command",
        }
        system, user = request.messages
        assert system["role"] == "system" and str(s.cwd) in system["content"]
        assert user == {"role": "user", "content": "Say hello"}

    drive(agent, mock, "plain_answer", body)


def test_the_clients_system_prompt_reaches_the_model(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        mock.script(reply(text("Brief.")))
        peer = await s.start()
        system_prompt = {"mode": "append", "content": [{"type": "text", "text": "Answer in one word."}]}
        params = {"cwd": str(s.cwd), "mcpServers": [], "systemPrompt": system_prompt}
        created = await peer.request("session/new", params)
        assert created.ok, created.raw
        response = await peer.prompt(created.result["sessionId"], "Describe yourself")
        assert response.stop_reason == "end_turn", response.raw
        (request,) = mock.requests
        system = request.messages[0]
        assert system["role"] == "system" and system["content"].endswith("\nAnswer in one word."), system
        assert str(s.cwd) in system["content"], system

    drive(agent, mock, "system_prompt", body)


def test_reads_a_file_through_the_editor(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        (s.cwd / "notes.txt").write_text("the answer is 42\n")
        mock.script(
            reply(text("Let me look."), tool_call("read_file", {"path": "notes.txt"}, "call_read")),
            reply(text("The notes say 42.")),
        )
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        response = await peer.prompt(session, "What do my notes say?")
        assert response.stop_reason == "end_turn", response.raw
        (read,) = s.requests_to_client("fs/read_text_file")
        assert read["path"] == str(s.cwd / "notes.txt")
        first = s.tool_updates()[0]
        assert first["sessionUpdate"] == "tool_call" and first["kind"] == "read"
        assert s.tool_updates()[-1]["status"] == "completed"
        assert s.answer() == "Let me look.The notes say 42."
        _, second = mock.wait_for_requests(2)
        assistant = second.messages[-2]
        assert assistant["role"] == "assistant"
        assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["read_file"]
        assert assistant["tool_calls"][0]["id"] == "call_read"
        assert tool_message(second, "call_read") == "the answer is 42\n"

    drive(agent, mock, "read_file", body)


def test_tool_failures_are_told_to_the_model(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        mock.script(
            reply(
                tool_call("read_file", {"path": "missing.txt"}, "call_missing", index=0),
                tool_call("delete_everything", {}, "call_unknown", index=1),
            ),
            reply(text("Sorry, I could not.")),
        )
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        response = await peer.prompt(session, "Read missing.txt")
        assert response.stop_reason == "end_turn", response.raw
        (read,) = s.requests_to_client("fs/read_text_file")
        assert read["path"] == str(s.cwd / "missing.txt")
        assert s.tool_updates()[-1]["status"] == "failed", s.tool_updates()
        _, second = mock.wait_for_requests(2)
        assert [c["id"] for c in second.messages[-3]["tool_calls"]] == ["call_missing", "call_unknown"]
        assert tool_message(second, "call_missing").startswith("error:")
        assert "no tool delete_everything" in tool_message(second, "call_unknown")

    drive(agent, mock, "tool_failures", body)


def test_a_turn_makes_at_most_ten_model_calls(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        (s.cwd / "loop.txt").write_text("again\n")
        mock.script(*(reply(tool_call("read_file", {"path": "loop.txt"}, f"call_{n}")) for n in range(11)))
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        response = await peer.prompt(session, "Read it forever")
        assert response.stop_reason == "max_turn_requests", response.raw
        assert len(mock.requests) == 10
        assert len(s.requests_to_client("fs/read_text_file")) == 10

    drive(agent, mock, "max_steps", body)


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "rejected"])
def test_edit_behind_a_permission(agent: Agent, mock: MockModel, allowed: bool) -> None:
    async def body(s: Scene) -> None:
        target = s.cwd / "greeting.txt"
        target.write_text("hello world\n")
        edit = {"path": "greeting.txt", "old_text": "world", "new_text": "there"}
        mock.script(reply(tool_call("edit_file", edit, "call_edit")), reply(text("Done.")))
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        prompt = peer.start_prompt(session, "Greet them instead")
        ask = await peer.permission()
        diff = [c for c in s.tool_updates()[0]["content"] if c["type"] == "diff"]
        assert diff == [
            {"type": "diff", "path": str(target), "oldText": "hello world\n", "newText": "hello there\n"}
        ], s.tool_updates()[0]
        ask.select(option(ask, "allow_once" if allowed else "reject_once"))
        response = await prompt
        assert response.stop_reason == "end_turn", response.raw
        writes = s.requests_to_client("fs/write_text_file")
        told = tool_message(mock.wait_for_requests(2)[1], "call_edit")
        if allowed:
            assert writes == [{"sessionId": session, "path": str(target), "content": "hello there\n"}]
            assert target.read_text() == "hello there\n"
            assert s.tool_updates()[-1]["status"] == "completed"
        else:
            assert writes == []
            assert target.read_text() == "hello world\n"
            assert s.tool_updates()[-1]["status"] == "failed"
            assert "rejected" in told, told

    drive(agent, mock, f"edit_{'allowed' if allowed else 'rejected'}", body)


def test_runs_a_command_in_the_editors_terminal(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        command = "echo hello from the terminal"
        mock.script(reply(tool_call("run_command", {"command": command}, "call_run")), reply(text("It printed.")))
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        prompt = peer.start_prompt(session, "Say hello in the shell")
        ask = await peer.permission()
        ask.select(option(ask, "allow_once"))
        response = await prompt
        assert response.stop_reason == "end_turn", response.raw
        (created,) = s.requests_to_client("terminal/create")
        assert created["command"] == "sh" and created["args"] == ["-c", command]
        assert created["cwd"] == str(s.cwd)
        embedded = [c for u in s.tool_updates() for c in u.get("content") or [] if c["type"] == "terminal"]
        assert embedded, s.tool_updates()
        assert s.tool_updates()[-1]["status"] == "completed"
        told = tool_message(mock.wait_for_requests(2)[1], "call_run")
        assert "hello from the terminal" in told and "exit code 0" in told, told
        assert s.requests_to_client("terminal/release"), "the terminal was not released"

    drive(agent, mock, "run_command", body)


def test_cancel_aborts_the_model_request(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        mock.script(slow(text("Thinking about it")))
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        since = s.run.mark()
        prompt = peer.start_prompt(session, "Take your time")
        await peer.wait_for(is_update("agent_message_chunk", session), since)
        await peer.cancel(session)
        response = await prompt
        assert response.stop_reason == "cancelled", response.raw
        (request,) = mock.requests
        disconnected = await asyncio.get_running_loop().run_in_executor(None, request.disconnected.wait, 10.0)
        assert disconnected, "the agent did not close the model's stream when the turn was cancelled"

    drive(agent, mock, "cancel", body)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_model_errors_fail_the_prompt_with_their_message(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        mock.script(
            http_error(401, "Incorrect API key provided: sk-test."),
            malformed(),
            failing(text("Half an ans"), message="The server is overloaded."),
            cut(text("Half an ans")),
            reply(text("Still here.")),
        )
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        refused = await peer.prompt(session, "hello")
        assert refused.code == -32603, refused.raw
        assert "401" in refused.error["message"] and "Incorrect API key provided" in refused.error["message"]
        broken = await peer.prompt(session, "hello again")
        assert "malformed" in broken.error["message"], broken.raw
        overloaded = await peer.prompt(session, "once more")
        assert overloaded.code == -32603 and "The server is overloaded." in overloaded.error["message"], overloaded.raw
        # The server dies in the middle of the body: each agent says the model server failed.
        died = await peer.prompt(session, "and again")
        assert died.code == -32603 and "model server" in died.error["message"], died.raw
        fine = await peer.prompt(session, "and now?")
        assert fine.stop_reason == "end_turn" and s.answer().endswith("Still here.")
        # Nothing listens on the port: the connection is refused.
        away = await s.start(OPENAI_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1")
        other = await away.new_session(str(s.cwd))
        unreachable = await away.prompt(other, "hello?")
        assert "cannot talk to the model server" in unreachable.error["message"], unreachable.raw
        # No model configured: said at the first prompt.
        unnamed = await s.start(OPENAI_MODEL="")
        third = await unnamed.new_session(str(s.cwd))
        missing = await unnamed.prompt(third, "hello?")
        assert "OPENAI_MODEL" in missing.error["message"], missing.raw

    drive(agent, mock, "model_errors", body)


def _conversation(request: Any) -> List[Dict[str, Any]]:
    """A request's messages after the system message, with only the fields compared."""
    out = []
    for m in request.messages[1:]:
        kept: Dict[str, Any] = {"role": m["role"]}
        if m.get("content"):
            kept["content"] = m["content"]
        if m.get("tool_calls"):
            kept["tool_calls"] = [(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]]
        out.append(kept)
    return out


def _normalise_arguments(conversation: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    for m in conversation:
        if "tool_calls" in m:
            m["tool_calls"] = [(name, json.loads(arguments)) for name, arguments in m["tool_calls"]]
    return conversation


def test_a_second_turn_sees_the_first(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        mock.script(reply(text("Paris.")), reply(text("About two million.")))
        peer = await s.start()
        session = await peer.new_session(str(s.cwd))
        assert (await peer.prompt(session, "What is the capital of France?")).stop_reason == "end_turn"
        assert (await peer.prompt(session, "How many people live there?")).stop_reason == "end_turn"
        _, second = mock.wait_for_requests(2)
        assert _conversation(second) == [
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "How many people live there?"},
        ]

    drive(agent, mock, "second_turn", body)


def test_history_survives_a_restart_through_session_load(agent: Agent, mock: MockModel) -> None:
    async def body(s: Scene) -> None:
        (s.cwd / "notes.txt").write_text("the answer is 42\n")
        mock.script(
            reply(tool_call("read_file", {"path": "notes.txt"}, "call_read")),
            reply(text("The notes say 42.")),
            reply(text("You asked about your notes.")),
        )
        first = await s.start()
        session = await first.new_session(str(s.cwd))
        assert (await first.prompt(session, "What do my notes say?")).stop_reason == "end_turn"
        assert await first.hang_up() == 0
        # A new process on the same SQLite file: the conversation comes from the journal.
        second = await s.start()
        loaded = await second.load(session, str(s.cwd))
        assert loaded.ok, loaded.raw
        assert (await second.prompt(session, "What did I ask you?")).stop_reason == "end_turn"
        requests = mock.wait_for_requests(3)
        conversation = _normalise_arguments(_conversation(requests[2]))
        path = {"path": "notes.txt"}
        calls = [m for m in conversation if "tool_calls" in m]
        assert [c["tool_calls"] for c in calls] == [[("read_file", path)]], conversation
        assert conversation[0] == {"role": "user", "content": "What do my notes say?"}
        assert {"role": "tool", "content": "the answer is 42\n"} in conversation, conversation
        assert conversation[-2:] == [
            {"role": "assistant", "content": "The notes say 42."},
            {"role": "user", "content": "What did I ask you?"},
        ], conversation

    drive(agent, mock, "history_after_load", body)
