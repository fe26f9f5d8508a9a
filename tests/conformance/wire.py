"""One demo agent as a subprocess over stdio, every line in both directions recorded.

A ``Run`` is one scenario against one agent: it starts agent processes (several when a scenario
restarts the agent on the same store), records the transcript, validates every agent message
against the generated v1 schema as it arrives, and shuts everything down.

A ``Peer`` is one process: the official ACP client (``acp.ClientSideConnection``) drives it through
``SdkTransport``, a message transport that writes and reads the process's pipes itself so that the
recorded order is the order on the wire: a client line is recorded before it is written, an agent
line when it is read, before the client sees it. Raw JSON-RPC goes through the same pipes
(``send_line``, ``raw_request``): responses to raw requests (string ids ``raw-N``) and anything the
SDK is not attached for are kept away from the SDK.

The client really is an editor (``editor.Editor``): the agent's ``fs/*`` calls read and write real
files, its ``terminal/*`` calls run real processes, its ``elicitation/create`` gets the answers a
scenario queued. What the client advertises is the scenario's choice (``Run.start(capabilities=…)``).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, cast

from acp import PROTOCOL_VERSION, text_block
from acp.client.connection import ClientSideConnection
from acp.exceptions import RequestError
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from .agents import Agent
from .editor import Editor
from .remote import STDIO, RemoteAgent, Transport, listen
from .schema import check_agent_message, check_agent_message_v2, id_key

STEP_TIMEOUT = 20.0
"""The longest any single wait may take: a hang fails the scenario with a readable message."""

QUIET = 0.3
"""How long "nothing more arrives" is watched for."""

CWD = "/tmp"
"""The working directory every session is created with (absolute, canonical, on every Linux)."""

_SENT: "contextvars.ContextVar[Optional[List[Any]]]" = contextvars.ContextVar("acp_conformance_sent", default=None)


class ScenarioError(AssertionError):
    """A scenario step failed (timeout, unexpected message)."""


@dataclass
class Entry:
    """One recorded line: ``dir`` is the agent's view (``in`` = client to agent, ``out`` = agent to
    client) or ``note`` (a harness event such as a process start or exit); ``msg`` is the parsed
    message, or the raw line when it is not JSON."""

    dir: str
    proc: int
    line: str
    msg: Any
    is_json: bool = True


class SdkTransport:
    """The SDK's message transport over a ``Peer``'s pipes (``acp._transport.Transport``)."""

    def __init__(self, peer: "Peer") -> None:
        self._peer = peer

    async def send(self, message: Dict[str, Any]) -> None:
        holder = _SENT.get()
        if holder is not None and "method" in message and "id" in message:
            holder.append(message["id"])
        # Exactly the SDK's own stdio framing (acp.task.sender.MessageSender).
        await self._peer.send_line(json.dumps(message, separators=(",", ":")))

    async def receive(self) -> Optional[Dict[str, Any]]:
        return await self._peer._sdk_inbox.get()

    async def close(self) -> None:
        """The harness owns the pipes (``Peer.hang_up``)."""


@dataclass
class PermissionAsk:
    """A ``session/request_permission`` the client has not answered yet."""

    session_id: str
    tool_call: Any
    options: List[Any]
    _answer: "asyncio.Future[Any]" = field(repr=False)

    @property
    def option_ids(self) -> List[str]:
        return [o.option_id for o in self.options]

    def select(self, option_id: str) -> None:
        self._answer.set_result(
            RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))
        )

    def cancelled(self) -> None:
        self._answer.set_result(RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled")))


class Client:
    """The client side the SDK calls into: permission requests are queued for the scenario to
    answer; session updates are read from the recorded transcript instead; files, terminals and
    elicitations are the editor's (``editor.Editor``)."""

    def __init__(self) -> None:
        self.permissions: "asyncio.Queue[PermissionAsk]" = asyncio.Queue()
        self.editor = Editor()

    async def read_text_file(
        self, session_id: str, path: str, line: Optional[int] = None, limit: Optional[int] = None, **kwargs: Any
    ) -> Any:
        return ReadTextFileResponse(content=await self.editor.read_text_file(path, line, limit))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        await self.editor.write_text_file(path, content)
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: Optional[List[str]] = None,
        env: Optional[List[Any]] = None,
        cwd: Optional[str] = None,
        output_byte_limit: Optional[int] = None,
        **kwargs: Any,
    ) -> Any:
        variables = {v.name: v.value for v in env or []}
        terminal_id = await self.editor.create_terminal(command, list(args or []), variables, cwd, output_byte_limit)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return TerminalOutputResponse.model_validate(await self.editor.terminal_output(terminal_id))

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return WaitForTerminalExitResponse.model_validate(await self.editor.wait_for_terminal_exit(terminal_id))

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        await self.editor.kill_terminal(terminal_id)
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        await self.editor.release_terminal(terminal_id)
        return ReleaseTerminalResponse()

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        answer = await self.editor.create_elicitation(message, mode.model_dump(mode="json", by_alias=True))
        return answer

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        await self.editor.complete_elicitation(elicitation_id)

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        ask = PermissionAsk(session_id, tool_call, list(options), asyncio.get_running_loop().create_future())
        self.permissions.put_nowait(ask)
        return await ask._answer

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        pass

    def on_connect(self, conn: Any) -> None:
        pass


@dataclass
class Reply:
    """The raw response to a request (``result`` or ``error``), plus the SDK's typed model."""

    raw: Dict[str, Any]
    model: Any = None

    @property
    def ok(self) -> bool:
        return "result" in self.raw

    @property
    def result(self) -> Any:
        assert "result" in self.raw, f"expected a result, got {self.raw}"
        return self.raw["result"]

    @property
    def error(self) -> Dict[str, Any]:
        assert "error" in self.raw, f"expected an error, got {self.raw}"
        return self.raw["error"]

    @property
    def code(self) -> int:
        return self.error["code"]

    @property
    def stop_reason(self) -> str:
        return self.result["stopReason"]


class Peer:
    """One agent process."""

    def __init__(self, run: "Run", index: int, argv: Sequence[str], env: Dict[str, str]) -> None:
        self.run = run
        self.index = index
        self.argv = list(argv)
        self.env = env
        self.process: Optional[asyncio.subprocess.Process] = None
        """The process the client talks to: the agent over stdio, the relay to it otherwise."""
        self.remote: Optional[RemoteAgent] = None
        """The agent itself when it is served remotely (``run.transport`` is http or ws)."""
        self.client = Client()
        self.conn: Optional[ClientSideConnection] = None
        self.asked: Dict[str, List[str]] = {}
        # The ACP version the agent speaks on this connection: 2 once it answers `initialize` so.
        self.protocol = 1
        self.exit_code: Optional[int] = None
        self._sdk_inbox: "asyncio.Queue[Optional[Dict[str, Any]]]" = asyncio.Queue()
        self._raw_inbox: "asyncio.Queue[Any]" = asyncio.Queue()
        self._raw_pending: Dict[str, "asyncio.Future[Dict[str, Any]]"] = {}
        self._raw_ids = 0
        self._pump_task: Optional["asyncio.Task[None]"] = None
        self._eof = asyncio.Event()
        self._stdin_closed = False
        self._cut_short: Optional[str] = None

    # ---- process ---------------------------------------------------------------------------

    async def _spawn(self) -> None:
        transport = self.run.transport
        if transport.remote:
            # The agent listens; the client talks to the relay, which reaches it through the
            # official TypeScript SDK's remote client stream (see `remote`).
            self.remote = await listen(
                self.run.agent.name,
                self.argv,
                self.env,
                self.run.dir,
                self.run.dir / f"stderr-{self.index}.txt",
                self.run.dir / f"stdout-{self.index}.txt",
                STEP_TIMEOUT,
            )
            assert transport.relay is not None
            argv: List[str] = [*transport.relay, transport.name, self.remote.url]
            log = f"relay-{self.index}.txt"
        else:
            argv = self.argv
            log = f"stderr-{self.index}.txt"
        stderr = open(self.run.dir / log, "wb")  # noqa: SIM115 (closed in hang_up)
        self._stderr = stderr
        self.process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=self.env,
            cwd=str(self.run.dir),
            limit=64 * 1024 * 1024,
            start_new_session=True,
        )
        self.run._note(self.index, {"start": self.index})
        self._pump_task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        while True:
            raw = await stdout.readline()
            if not raw:
                break
            self._received(raw)
        self._eof.set()
        self._sdk_inbox.put_nowait(None)
        for future in self._raw_pending.values():
            if not future.done():
                future.set_exception(ScenarioError("the agent closed stdout before answering"))

    def _received(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace")
        line = text[:-1] if text.endswith("\n") else text
        try:
            message = json.loads(line)
            is_json = True
        except ValueError:
            message, is_json = line, False
        entry = Entry("out", self.index, line, message, is_json)
        self.run._record(entry)
        if not is_json:
            if not text.endswith("\n"):
                # The end of stdout cut a line short: a process killed mid-write (see `kill`).
                self._cut_short = line
                return
            self.run.violations.append(f"p{self.index}: stdout carried a line that is not JSON: {line!r}")
            return
        if self.protocol == 1 and _answers_initialize_with_v2(message, self.asked):
            # The agent speaks v2 on this connection from its `initialize` answer on.
            self.protocol = 2
        check = check_agent_message_v2 if self.protocol == 2 else check_agent_message
        for problem in check(message, self.asked):
            self.run.violations.append(f"p{self.index}: {problem} in {line}")
        if not isinstance(message, dict):
            self._raw_inbox.put_nowait(message)
            return
        if "method" not in message and "id" in message:
            if message["id"] is None:  # an answer to a line that had no usable id: never the SDK's
                self._raw_inbox.put_nowait(message)
                return
            future = self._raw_pending.pop(id_key(message["id"]), None)
            if future is not None:
                if not future.done():
                    future.set_result(message)
                return
        if self.conn is not None:
            self._sdk_inbox.put_nowait(message)
        else:
            self._raw_inbox.put_nowait(message)

    async def send_line(self, line: str) -> None:
        """Writes one line (``line`` without its newline) to the agent, recording it first."""
        assert self.process is not None and self.process.stdin is not None
        self._record_sent(line)
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        await self.process.stdin.drain()

    async def send_bytes(self, data: bytes) -> None:
        """Writes raw bytes (possibly several lines, possibly not UTF-8) in one write, recorded
        line by line."""
        assert self.process is not None and self.process.stdin is not None
        for raw in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
            self._record_sent(raw.decode("utf-8", errors="backslashreplace"), utf8=_is_utf8(raw))
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    def _record_sent(self, line: str, utf8: bool = True) -> None:
        try:
            if not utf8:
                raise ValueError("not UTF-8")
            message = json.loads(line)
            is_json = True
        except ValueError:
            message, is_json = line, False
        if is_json and isinstance(message, dict) and "method" in message and "id" in message:
            self.asked.setdefault(id_key(message["id"]), []).append(message["method"])
        self.run._record(Entry("in", self.index, line, message, is_json))

    async def send(self, message: Any) -> None:
        """Writes one JSON message."""
        await self.send_line(json.dumps(message, separators=(",", ":")))

    async def hang_up(self, timeout: float = 10.0) -> int:
        """EOF on the agent's stdin; waits for it to flush and exit. Returns its exit code."""
        assert self.process is not None
        if not self._stdin_closed:
            self._stdin_closed = True
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.run._note(self.index, {"eof": self.index})
        try:
            await asyncio.wait_for(self._eof.wait(), timeout)
            code = await asyncio.wait_for(self.process.wait(), timeout)
        except asyncio.TimeoutError:
            self._kill()
            await self.process.wait()
            what = "the relay" if self.remote is not None else "the agent"
            self.run.violations.append(f"p{self.index}: {what} did not exit within {timeout}s of EOF; killed")
            code = -9
        if self._pump_task is not None:
            await self._pump_task
        if self.remote is not None:
            # The relay closed the remote connection; the agent is stopped as a server is.
            if code != 0:
                self.run.violations.append(
                    f"p{self.index}: the relay exited with status {code} (relay-{self.index}.txt): {self._relay_says()}"
                )
            code = await self.remote.stop(self.run.violations, self.index)
        if self._cut_short is not None:
            self.run.violations.append(f"p{self.index}: stdout ended in the middle of a line: {self._cut_short!r}")
        if self.conn is not None:
            await self.conn.close()
        self._stderr.close()
        if self.exit_code is None:
            self.exit_code = code
            self.run._note(self.index, {"exit": code})
        return code

    async def kill(self) -> None:
        """``SIGKILL`` (the process and its group): a crash, with no chance to clean up (a line it
        was writing may be cut short: that is not held against it)."""
        assert self.process is not None
        if self.remote is not None:
            # The agent dies, and the relay with it: what the relay has not written yet is lost
            # with the connection, as what a dying agent has not written is. (Left alone, the relay
            # would first write out everything the SDK's stream had buffered, which it reads
            # without flow control: a long stream's worth.)
            self.remote.kill()
            await self.remote.reaped()
        self._kill()
        await self.process.wait()
        if self._pump_task is not None:
            await self._pump_task
        if self.conn is not None:
            await self.conn.close()
        self._stderr.close()
        self.exit_code = -9
        self.run._note(self.index, {"killed": self.index})

    def _relay_says(self) -> str:
        try:
            return (self.run.dir / f"relay-{self.index}.txt").read_text(errors="replace").strip()[-600:]
        except OSError:
            return ""

    def _kill(self) -> None:
        if self.remote is not None:
            self.remote.kill()
        if self.process is not None and self.process.returncode is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def _abort(self) -> None:
        """Kills a process left running by a failed scenario (and the commands it ran)."""
        await self.editor.close()
        self._kill()
        for process in (self.process, self.remote.process if self.remote is not None else None):
            if process is not None:
                try:
                    await asyncio.wait_for(process.wait(), 5)
                except asyncio.TimeoutError:
                    pass
        if self._pump_task is not None and not self._pump_task.done():
            self._pump_task.cancel()
        if self.conn is not None:
            await self.conn.close()
        stderr = getattr(self, "_stderr", None)  # unset when the agent never started listening
        if stderr is not None and not stderr.closed:
            stderr.close()

    # ---- the official client ---------------------------------------------------------------

    @property
    def editor(self) -> Editor:
        """What the agent's calls to the client do (files, terminals, elicitations)."""
        return self.client.editor

    def attach_sdk(self) -> ClientSideConnection:
        # Elicitation (schema v1.21.0) is "unstable" to the SDK: routed only when asked for.
        self.conn = ClientSideConnection(cast(Any, self.client), SdkTransport(self), use_unstable_protocol=True)
        return self.conn

    async def _sdk(self, call: Callable[[], Awaitable[Any]], timeout: float = STEP_TIMEOUT) -> Reply:
        """Runs one SDK request and returns the raw response the agent wrote for it."""
        holder: List[Any] = []
        token = _SENT.set(holder)
        model = None
        try:
            model = await asyncio.wait_for(call(), timeout)
        except RequestError:
            pass
        except asyncio.TimeoutError:
            raise ScenarioError(
                f"p{self.index}: no response within {timeout}s to {self.run.last_request(self.index)}"
            ) from None
        finally:
            _SENT.reset(token)
        assert holder, "the SDK sent no request"
        response = self.run.response_to(self.index, holder[-1])
        assert response is not None, f"no recorded response to request {holder[-1]}"
        return Reply(response, model)

    async def initialize(
        self, protocol_version: int = PROTOCOL_VERSION, capabilities: Optional[Dict[str, Any]] = None
    ) -> Reply:
        """``initialize``, advertising ``capabilities`` (``clientCapabilities`` in its wire form;
        the SDK's defaults when ``None``)."""
        assert self.conn is not None
        advertised = None if capabilities is None else ClientCapabilities.model_validate(capabilities)
        return await self._sdk(
            lambda: self.conn.initialize(protocol_version=protocol_version, client_capabilities=advertised)
        )

    async def new_session(self, cwd: str = CWD) -> str:
        reply = await self.new_session_reply(cwd)
        return reply.result["sessionId"]

    async def new_session_reply(self, cwd: str = CWD) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.new_session(cwd=cwd, mcp_servers=[]))

    async def prompt(self, session_id: str, text: str, timeout: float = STEP_TIMEOUT) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.prompt(session_id=session_id, prompt=[text_block(text)]), timeout)

    async def prompt_blocks(self, session_id: str, blocks: List[Any]) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.prompt(session_id=session_id, prompt=blocks))

    def start_prompt(self, session_id: str, text: str, timeout: float = STEP_TIMEOUT) -> "asyncio.Task[Reply]":
        """A prompt running in the background; await the task for its reply."""
        return asyncio.get_running_loop().create_task(self.prompt(session_id, text, timeout))

    async def cancel(self, session_id: str) -> None:
        assert self.conn is not None
        await self.conn.cancel(session_id=session_id)

    async def load(self, session_id: str, cwd: str = CWD) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[]))

    async def resume(self, session_id: str, cwd: str = CWD) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.resume_session(cwd=cwd, session_id=session_id, mcp_servers=[]))

    async def list(self, cwd: Optional[str] = None, cursor: Optional[str] = None) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.list_sessions(cwd=cwd, cursor=cursor))

    async def list_all(self, cursor: Optional[str] = None) -> List[str]:
        """Every session id listed from ``cursor`` on, following ``nextCursor``."""
        ids: List[str] = []
        for _ in range(10_000):
            page = (await self.list(cursor=cursor)).result
            ids += [s["sessionId"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                return ids
        raise ScenarioError(f"p{self.index}: session/list pagination does not end")

    async def close(self, session_id: str) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.close_session(session_id=session_id))

    async def set_mode(self, session_id: str, mode_id: str) -> Reply:
        assert self.conn is not None
        return await self._sdk(lambda: self.conn.set_session_mode(session_id=session_id, mode_id=mode_id))

    async def set_config(self, session_id: str, config_id: str, value: str) -> Reply:
        assert self.conn is not None
        return await self._sdk(
            lambda: self.conn.set_config_option(config_id=config_id, session_id=session_id, value=value)
        )

    async def request(self, method: str, params: Any) -> Reply:
        """Any request through the SDK's JSON-RPC connection (methods it has no helper for)."""
        assert self.conn is not None
        return await self._sdk(lambda: self.conn._conn.send_request(method, params))

    async def permission(self, timeout: float = STEP_TIMEOUT) -> PermissionAsk:
        """The next permission request the agent sent."""
        try:
            return await asyncio.wait_for(self.client.permissions.get(), timeout)
        except asyncio.TimeoutError:
            raise ScenarioError(f"p{self.index}: no session/request_permission within {timeout}s") from None

    # ---- raw JSON-RPC ----------------------------------------------------------------------

    async def raw_request(self, method: str, params: Any = None, *, omit_params: bool = False) -> Dict[str, Any]:
        """A request with a string id ``raw-N``, answered past the SDK: the raw response."""
        self._raw_ids += 1
        request_id = f"raw-{self._raw_ids}"
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if not omit_params:
            message["params"] = params
        return await self.raw_exchange(message, request_id)

    async def raw_exchange(self, message: Any, request_id: Any, timeout: float = STEP_TIMEOUT) -> Dict[str, Any]:
        """Sends ``message`` (an object, or a line when a string) and waits for the response with
        ``request_id``."""
        future: "asyncio.Future[Dict[str, Any]]" = asyncio.get_running_loop().create_future()
        self._raw_pending[id_key(request_id)] = future
        if isinstance(message, str):
            await self.send_line(message)
        else:
            await self.send(message)
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            self._raw_pending.pop(id_key(request_id), None)
            raise ScenarioError(f"p{self.index}: no response with id {request_id!r} within {timeout}s") from None

    async def next_raw(self, timeout: float = STEP_TIMEOUT) -> Any:
        """The next agent message nobody else claimed."""
        try:
            return await asyncio.wait_for(self._raw_inbox.get(), timeout)
        except asyncio.TimeoutError:
            raise ScenarioError(f"p{self.index}: no message from the agent within {timeout}s") from None

    async def expect_silence(self, seconds: float = QUIET) -> None:
        """Asserts that the agent writes nothing for ``seconds``."""
        before = self.run.count_out(self.index)
        await asyncio.sleep(seconds)
        after = self.run.count_out(self.index)
        assert after == before, f"p{self.index}: unexpected output: {self.run.out_since(self.index, before)}"

    async def wait_for(self, predicate: Callable[[Any], bool], since: int = 0, timeout: float = STEP_TIMEOUT) -> Any:
        """Waits until the agent wrote a message matching ``predicate`` (transcript index >= since)."""
        return await self.run.wait_for(self.index, predicate, since, timeout)


def _answers_initialize_with_v2(message: Any, asked: Dict[str, List[str]]) -> bool:
    """Whether ``message`` answers an ``initialize`` with protocol version 2."""
    if not isinstance(message, dict) or "method" in message or "id" not in message:
        return False
    methods = asked.get(id_key(message["id"])) or []
    result = message.get("result")
    return bool(methods) and methods[0] == "initialize" and isinstance(result, dict) and result.get("protocolVersion") == 2


class Run:
    """One scenario against one agent."""

    def __init__(self, agent: Agent, directory: Path, transport: Transport = Transport(STDIO)) -> None:
        assert agent.command is not None
        self.agent = agent
        self.transport = transport
        """How the client reaches the agent (``remote``): stdio, or the relay over http or ws."""
        self.dir = directory
        self.entries: List[Entry] = []
        self.violations: List[str] = []
        self.peers: List[Peer] = []
        self.store = str(directory / "sessions.sqlite")
        self._tick = asyncio.Event()
        self.expected_exit: Dict[int, Optional[int]] = {}

    # ---- starting agents ---------------------------------------------------------------------

    async def start(
        self,
        *args: str,
        store: Optional[str] = ":memory:",
        sdk: bool = True,
        initialize: bool = True,
        env: Optional[Dict[str, str]] = None,
        capabilities: Optional[Dict[str, Any]] = None,
    ) -> Peer:
        """Starts the agent (``--store`` unless ``store`` is None, then ``args``); with ``sdk`` the
        official client is attached, and with ``initialize`` too it is initialized, advertising
        ``capabilities`` (``clientCapabilities``; the SDK's defaults when ``None``)."""
        argv = list(self.agent.command or ())
        if store is not None:
            argv += ["--store", store]
        argv += list(args)
        peer = Peer(self, len(self.peers) + 1, argv, self._env(env))
        self.peers.append(peer)
        await peer._spawn()
        if sdk:
            peer.attach_sdk()
            if initialize:
                reply = await peer.initialize(capabilities=capabilities)
                assert reply.ok, reply.raw
        return peer

    def _env(self, env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """The agents' environment: a home and data directory of this run's own."""
        full_env = dict(os.environ)
        full_env.pop("ACP_FACADE_WIRE_TRACE", None)
        full_env.update({"HOME": str(self.dir), "XDG_DATA_HOME": str(self.dir / "data"), "NO_COLOR": "1"})
        full_env.update(env or {})
        return full_env

    async def command(self, *args: str, timeout: float = 30.0) -> "tuple[int, bytes, bytes]":
        """Runs the agent with exactly ``args`` and no client (stdin closed) until it exits: its
        exit status, stdout and stderr. For the command line itself (``--help``, bad arguments);
        nothing of it enters the transcript."""
        process = await asyncio.create_subprocess_exec(
            *(self.agent.command or ()),
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._env(),
            cwd=str(self.dir),
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            raise ScenarioError(f"{' '.join(args)}: the agent did not exit within {timeout}s") from None
        assert process.returncode is not None
        return process.returncode, out, err

    async def finish(self) -> None:
        """Hangs up every process still running (each must exit 0 on EOF)."""
        for peer in self.peers:
            if peer.exit_code is None:
                code = await peer.hang_up()
                expected = self.expected_exit.get(peer.index, 0)
                if expected is not None and code != expected:
                    self.violations.append(f"p{peer.index}: exit code {code} after EOF (expected {expected})")

    async def abort(self) -> None:
        for peer in self.peers:
            if peer.exit_code is None:
                await peer._abort()

    # ---- the transcript ----------------------------------------------------------------------

    def _record(self, entry: Entry) -> None:
        self.entries.append(entry)
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    def _note(self, proc: int, what: Dict[str, Any]) -> None:
        self.entries.append(Entry("note", proc, json.dumps(what), what))

    def mark(self) -> int:
        """The current end of the transcript (for ``since`` arguments)."""
        return len(self.entries)

    def out(self, since: int = 0, proc: Optional[int] = None) -> List[Any]:
        """The agent messages recorded from ``since`` on."""
        return [
            e.msg for e in self.entries[since:] if e.dir == "out" and (proc is None or e.proc == proc)
        ]

    def count_out(self, proc: int) -> int:
        return sum(1 for e in self.entries if e.dir == "out" and e.proc == proc)

    def out_since(self, proc: int, count: int) -> List[str]:
        return [e.line for e in self.entries if e.dir == "out" and e.proc == proc][count:]

    def updates(self, since: int = 0, session_id: Optional[str] = None, proc: Optional[int] = None) -> List[Dict[str, Any]]:
        """The ``update`` of every ``session/update`` from ``since`` on."""
        found = []
        for m in self.out(since, proc):
            if isinstance(m, dict) and m.get("method") == "session/update":
                params = m.get("params") or {}
                if session_id is None or params.get("sessionId") == session_id:
                    found.append(params.get("update") or {})
        return found

    def kinds(self, since: int = 0, session_id: Optional[str] = None) -> List[str]:
        return [u.get("sessionUpdate") for u in self.updates(since, session_id)]

    def texts(self, kind: str, since: int = 0, session_id: Optional[str] = None) -> List[str]:
        return [
            (u.get("content") or {}).get("text")
            for u in self.updates(since, session_id)
            if u.get("sessionUpdate") == kind
        ]

    def response_to(self, proc: int, request_id: Any) -> Optional[Dict[str, Any]]:
        key = id_key(request_id)
        for e in self.entries:
            if (
                e.dir == "out"
                and e.proc == proc
                and isinstance(e.msg, dict)
                and "method" not in e.msg
                and "id" in e.msg
                and id_key(e.msg["id"]) == key
            ):
                return e.msg
        return None

    def last_request(self, proc: int) -> str:
        for e in reversed(self.entries):
            if e.dir == "in" and e.proc == proc:
                return e.line[:300]
        return "(nothing sent)"

    async def wait_for(self, proc: int, predicate: Callable[[Any], bool], since: int, timeout: float) -> Any:
        position = since

        def find() -> Any:
            nonlocal position
            while position < len(self.entries):
                e = self.entries[position]
                position += 1
                if e.dir == "out" and e.proc == proc:
                    try:
                        if predicate(e.msg):
                            return e
                    except (KeyError, TypeError, AttributeError):
                        continue
            return None

        async def wait() -> Any:
            while True:
                tick = self._tick
                hit = find()
                if hit is not None:
                    return hit.msg
                await tick.wait()

        try:
            return await asyncio.wait_for(wait(), timeout)
        except asyncio.TimeoutError:
            raise ScenarioError(f"p{proc}: the awaited message did not arrive within {timeout}s") from None

    def dump(self) -> str:
        """The raw transcript, one JSON line per entry (``{"dir","proc","msg"}``)."""
        lines = []
        for e in self.entries:
            lines.append(json.dumps({"dir": e.dir, "proc": e.proc, "msg": e.msg}, ensure_ascii=False))
        return "\n".join(lines) + "\n"


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def is_update(kind: str, session_id: Optional[str] = None) -> Callable[[Any], bool]:
    """A ``wait_for`` predicate: a ``session/update`` of this kind (for this session)."""

    def matches(m: Any) -> bool:
        return (
            m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == kind
            and (session_id is None or m["params"]["sessionId"] == session_id)
        )

    return matches
