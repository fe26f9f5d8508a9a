"""The client handle (``acp_facade.Client``, ``Terminal``) of a runner turn and of a host's session,
driven in-process by the official ACP Python client, which serves files, terminals and elicitation:
each outcome as the host sees it (the value, or the ``ClientError`` subclass of its kind with its
code; ``asyncio.CancelledError`` for a cancelled call) and on the wire (what was sent, and not)."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

import pytest
from acp import RequestError
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    ElicitationCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from acp_facade import _bridge
from acp_facade import (
    AcpError,
    ClientError,
    InvalidArgumentError,
    MemoryStore,
    RejectedError,
    ReleasedError,
    RelativePathError,
    Runner,
    StopReason,
    Turn,
    TurnRunner,
    UnsupportedError,
)

from conftest import RecordingClient, connect, run

FILES = {"/work/notes.txt": "one\ntwo\nthree\n"}


def capabilities(**parts: Any) -> ClientCapabilities:
    """Client capabilities: everything by default, or only the parts named."""
    if not parts:
        parts = {"read": True, "write": True, "terminal": True, "elicitation": True}
    elicitation = None
    if parts.get("elicitation"):
        elicitation = ElicitationCapabilities.model_validate({"form": {}, "url": {}})
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=bool(parts.get("read")), write_text_file=bool(parts.get("write"))),
        terminal=bool(parts.get("terminal")),
        elicitation=elicitation,
    )


class Editor(RecordingClient):
    """A client serving an in-memory file system and scripted terminals, recording every call."""

    def __init__(self) -> None:
        super().__init__()
        self.files = dict(FILES)
        self.calls: List[Tuple[str, Dict[str, Any]]] = []
        self.terminals = 0

    def named(self, name: str) -> List[Dict[str, Any]]:
        return [params for called, params in self.calls if called == name]

    async def read_text_file(self, session_id: str, path: str, line: Optional[int] = None, limit: Optional[int] = None, **kwargs: Any) -> Any:
        self.calls.append(("read", {"path": path, "line": line, "limit": limit}))
        if path == "/work/hang":
            await asyncio.Event().wait()
        if path not in self.files:
            raise RequestError(-32002, "no such file", {"path": path})
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.calls.append(("write", {"path": path, "content": content}))
        self.files[path] = content
        return None

    async def create_terminal(self, session_id: str, command: str, args: Any = None, cwd: Any = None, env: Any = None, output_byte_limit: Any = None, **kwargs: Any) -> Any:
        self.calls.append(("create", {"command": command, "args": args, "cwd": cwd}))
        self.terminals += 1
        return CreateTerminalResponse(terminal_id=f"term-{self.terminals}")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append(("output", {"terminal_id": terminal_id}))
        return TerminalOutputResponse(output="hello\n", truncated=False, exit_status=TerminalExitStatus(exit_code=0))

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append(("wait", {"terminal_id": terminal_id}))
        if terminal_id == "term-1" and self.named("create")[0]["command"] == "sleep":
            await asyncio.Event().wait()
        return WaitForTerminalExitResponse(exit_code=0)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append(("kill", {"terminal_id": terminal_id}))
        return None

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append(("release", {"terminal_id": terminal_id}))
        return None


class Body(TurnRunner):
    """A runner whose turns run ``body``."""

    def __init__(self, body: Callable[[Turn], Awaitable[Any]]) -> None:
        self.body = body

    async def run_turn(self, turn: Turn) -> StopReason:
        stop = await self.body(turn)
        return stop if isinstance(stop, StopReason) else StopReason.END_TURN


async def one_turn(body: Callable[[Turn], Awaitable[Any]], caps: Optional[ClientCapabilities] = None) -> Editor:
    """Runs one prompt whose turn runs ``body``; the client it talked to."""
    editor = Editor()
    async with connect(Runner(MemoryStore(), Body(body)).agent(), editor, capabilities=caps or capabilities()) as conn:
        sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
    return editor


async def raised(call: Awaitable[Any]) -> BaseException:
    try:
        await call
    except (Exception, asyncio.CancelledError) as e:  # noqa: BLE001 - the test inspects it
        return e
    pytest.fail("the call returned")


def test_files_through_the_client() -> None:
    seen: Dict[str, Any] = {}

    async def body(turn: Turn) -> None:
        await turn.client.write_text_file("/work/new.txt", "fresh")
        seen["read"] = await turn.client.read_text_file("/work/notes.txt", 2, 1)
        seen["new"] = await turn.client.read_text_file("/work/new.txt")

    editor = run(lambda: one_turn(body))
    assert seen == {"read": "one\ntwo\nthree\n", "new": "fresh"}
    assert editor.named("read")[0] == {"path": "/work/notes.txt", "line": 2, "limit": 1}
    assert editor.files["/work/new.txt"] == "fresh"


def chunks_seen_at_each_read(body: Callable[[Turn], Awaitable[None]]) -> Tuple[List[int], Editor]:
    """Runs one prompt whose turn runs `body`; how many chunks the client had when each read came,
    and the client."""
    seen_at_read: List[int] = []

    class Counting(Editor):
        async def read_text_file(self, session_id: str, path: str, line: Optional[int] = None, limit: Optional[int] = None, **kwargs: Any) -> Any:
            seen_at_read.append(len(self.chunks()))
            return await super().read_text_file(session_id, path, line, limit, **kwargs)

    async def go() -> Editor:
        editor = Counting()
        async with connect(Runner(MemoryStore(), Body(body)).agent(), editor, capabilities=capabilities()) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
        return editor

    editor = run(go)
    return seen_at_read, editor


def test_a_turn_s_text_and_reads_reach_the_client_in_call_order() -> None:
    # Many operations queued by one step of host code, reads among them, and the text queued
    # just before `run_turn` returns: each read goes out after the chunks queued before it, and
    # every chunk reaches the client, in call order.
    async def body(turn: Turn) -> None:
        for i in range(200):
            await turn.text(f"t{i} ")
            if i % 70 == 69:
                assert await turn.client.read_text_file("/work/notes.txt") == FILES["/work/notes.txt"]
        await turn.text("last")

    seen_at_read, editor = chunks_seen_at_each_read(body)
    assert seen_at_read == [70, 140]
    assert editor.chunks() == [f"t{i} " for i in range(200)] + ["last"]


def test_a_read_begun_once_the_turn_s_queue_is_applied_still_follows_its_updates() -> None:
    # A read made while the turn's earlier calls wait in its queue goes through the queue; one
    # made once they are applied begins on the loop's thread, and waits only for their updates.
    async def body(turn: Turn) -> None:
        for i in range(12):
            await turn.text(f"t{i} ")
            if i % 2:
                await asyncio.sleep(0.001)
            await turn.client.read_text_file("/work/notes.txt")

    seen_at_read, editor = chunks_seen_at_each_read(body)
    assert seen_at_read == list(range(1, 13))
    assert editor.chunks() == [f"t{i} " for i in range(12)]


def test_each_failure_is_the_error_of_its_kind_and_refused_calls_send_nothing() -> None:
    errors: Dict[str, BaseException] = {}

    async def body(turn: Turn) -> None:
        errors["relative"] = await raised(turn.client.read_text_file("notes.txt"))
        errors["unsupported"] = await raised(turn.client.write_text_file("/work/x", "x"))
        errors["terminal"] = await raised(turn.client.create_terminal("ls"))
        errors["rejected"] = await raised(turn.client.read_text_file("/work/missing"))
        errors["url"] = await raised(turn.client.elicit_url("Open it", "not a url"))

    editor = run(lambda: one_turn(body, capabilities(read=True)))
    relative = errors["relative"]
    assert isinstance(relative, RelativePathError) and isinstance(relative, ClientError) and isinstance(relative, AcpError)
    assert (relative.kind, relative.code, relative.field, relative.path) == ("relative_path", -32602, "path", "notes.txt")  # type: ignore[attr-defined]
    unsupported = errors["unsupported"]
    assert isinstance(unsupported, UnsupportedError)
    assert (unsupported.kind, unsupported.code, unsupported.method) == ("unsupported", -32601, "fs/write_text_file")
    assert isinstance(errors["terminal"], UnsupportedError) and errors["terminal"].method == "terminal/create"
    assert isinstance(errors["url"], UnsupportedError) or isinstance(errors["url"], InvalidArgumentError)
    rejected = errors["rejected"]
    assert isinstance(rejected, RejectedError)
    assert (rejected.kind, rejected.code, rejected.message, rejected.data) == (
        "rejected",
        -32002,
        "no such file",
        {"path": "/work/missing"},
    )
    # Sent: the one read the client rejected; nothing for the calls refused at once.
    assert [c for c, _ in editor.calls] == ["read"]


def test_terminal_released_once_and_unusable_after() -> None:
    seen: Dict[str, Any] = {}

    async def body(turn: Turn) -> None:
        terminal = await turn.client.create_terminal("true", ["-x"], {"LANG": "C"}, "/work", 4096)
        assert terminal.content == {"type": "terminal", "terminalId": terminal.id}
        seen["status"] = await terminal.wait_for_exit()
        seen["output"] = await terminal.output()
        await terminal.release()
        await terminal.release()
        seen["released"] = await raised(terminal.output())
        seen["is_released"] = terminal.is_released()

    editor = run(lambda: one_turn(body))
    assert seen["status"].exit_code == 0
    assert (seen["output"].output, seen["output"].truncated) == ("hello\n", False)
    released = seen["released"]
    assert isinstance(released, ReleasedError)
    assert (released.code, released.terminal_id) == (-32600, "term-1")  # type: ignore[attr-defined]
    assert seen["is_released"] is True
    assert len(editor.named("release")) == 1 and len(editor.named("output")) == 1


def test_async_with_releases_the_terminal() -> None:
    async def body(turn: Turn) -> None:
        async with await turn.client.create_terminal("true") as terminal:
            await terminal.wait_for_exit()
        assert terminal.is_released()

    editor = run(lambda: one_turn(body))
    assert editor.named("release") == [{"terminal_id": "term-1"}]


def test_a_terminal_dropped_and_collected_is_released_while_the_turn_runs() -> None:
    counts: List[int] = []
    editor_ref: List[Editor] = []

    async def body(turn: Turn) -> None:
        await turn.client.create_terminal("true")  # dropped at once
        for _ in range(50):
            gc.collect()
            await asyncio.sleep(0.02)
            if editor_ref and editor_ref[0].named("release"):
                break
        counts.append(len(editor_ref[0].named("release")))

    async def main() -> None:
        editor = Editor()
        editor_ref.append(editor)
        async with connect(Runner(MemoryStore(), Body(body)).agent(), editor, capabilities=capabilities()) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]

    run(main)
    assert counts == [1], "released while the turn still ran"
    assert len(editor_ref[0].named("release")) == 1


def test_cancel_during_a_read_cancels_the_call_and_the_turn() -> None:
    seen: List[BaseException] = []

    async def body(turn: Turn) -> None:
        try:
            await turn.client.read_text_file("/work/hang")
        except asyncio.CancelledError as e:
            seen.append(e)
            raise

    async def main() -> None:
        editor = Editor()
        async with connect(Runner(MemoryStore(), Body(body)).agent(), editor, capabilities=capabilities()) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}]))  # type: ignore[list-item]
            while not editor.named("read"):
                await asyncio.sleep(0.005)
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(prompt, 5)).stop_reason == "cancelled"

    run(main)
    assert len(seen) == 1 and isinstance(seen[0], asyncio.CancelledError)


def test_cancel_while_a_terminal_runs_kills_and_releases_it() -> None:
    async def body(turn: Turn) -> None:
        terminal = await turn.client.create_terminal("sleep")
        await terminal.wait_for_exit()

    async def main() -> Editor:
        editor = Editor()
        async with connect(Runner(MemoryStore(), Body(body)).agent(), editor, capabilities=capabilities()) as conn:
            sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}]))  # type: ignore[list-item]
            while not editor.named("wait"):
                await asyncio.sleep(0.005)
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(prompt, 5)).stop_reason == "cancelled"
        return editor

    editor = run(main)
    assert len(editor.named("kill")) == 1
    assert len(editor.named("release")) == 1


def test_reads_answered_together_each_get_their_own_answer_and_cancelled_waiters_are_skipped() -> None:
    # The bridge completes every future queued since the loop last woke in one drain, in Rust
    # (`bridge_drain`): each answer must reach its own read, a read whose waiter was cancelled
    # while its answer was on the way must be skipped (not completed twice, nothing raised into
    # the loop), and no future may stay registered. The client holds every answer until all
    # reads are out, and the loop is kept busy while the core queues them, so they meet in the
    # bridge (the checks hold whatever the batches).
    count = 48
    files = {f"/work/f{i}.txt": f"content {i}\n" for i in range(count)}
    seen: Dict[int, Any] = {}
    dispatcher_errors: List[str] = []

    class Gated(Editor):
        def __init__(self) -> None:
            super().__init__()
            self.files.update(files)
            self.all_out = asyncio.Event()

        async def read_text_file(self, session_id: str, path: str, line: Optional[int] = None, limit: Optional[int] = None, **kwargs: Any) -> Any:
            self.calls.append(("read", {"path": path, "line": line, "limit": limit}))
            if len(self.named("read")) == count:
                self.all_out.set()
            await self.all_out.wait()
            return ReadTextFileResponse(content=self.files[path])

    async def body(turn: Turn) -> None:
        async def one(i: int) -> None:
            try:
                seen[i] = await turn.client.read_text_file(f"/work/f{i}.txt")
            except asyncio.CancelledError:
                seen[i] = "cancelled"

        tasks = [asyncio.ensure_future(one(i)) for i in range(count)]
        await asyncio.sleep(0)  # every read is queued
        for i in range(0, count, 3):
            tasks[i].cancel()  # its answer is still to come
        # Block the loop once the client has started answering, so the answers pile up.
        while not editor.all_out.is_set():
            await asyncio.sleep(0.001)
        time.sleep(0.05)
        await asyncio.gather(*tasks)

    editor = Gated()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            dispatcher_errors.append(record.getMessage())

    watch = Watch(logging.ERROR)
    logging.getLogger("acp_facade").addHandler(watch)
    try:

        async def go() -> None:
            async with connect(Runner(MemoryStore(), Body(body)).agent(), editor, capabilities=capabilities()) as conn:
                sid = (await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])  # type: ignore[list-item]
            assert _bridge.dispatcher._futures == {}

        run(go)
    finally:
        logging.getLogger("acp_facade").removeHandler(watch)
    assert seen == {i: "cancelled" if i % 3 == 0 else f"content {i}\n" for i in range(count)}
    assert dispatcher_errors == []
