"""The editor behind the conformance client: what the agent's calls to the client really do.

It serves ``fs/read_text_file`` and ``fs/write_text_file`` from the real file system, runs
``terminal/*`` commands as real processes (their output captured, their exit status real, killed
by ``terminal/kill`` and ``terminal/release``), and answers ``elicitation/create`` with the answers
a scenario queued (``elicitation/complete`` notifications are recorded). A scenario can make the
next call of a method fail with a JSON-RPC error (``fail_next``).

The official client SDK routes the agent's requests here (``wire.Client``); a method the client
did not advertise is still served, so that a request the agent should not have sent shows up in
the transcript (and fails the scenario's own checks) instead of hanging.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import signal
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Tuple

from acp.exceptions import RequestError

WORK_ROOT = Path("/tmp") / f"acp-conformance-{os.getpid()}"
"""Where scenarios keep the files their agents read and write: the same path for every agent of a
run (the transcripts compare paths), a different one for every run, removed when the run's process
exits."""


def work_dir(name: str) -> Path:
    """A fresh, empty directory ``name`` under :data:`WORK_ROOT` (absolute and canonical)."""
    if not WORK_ROOT.exists():
        atexit.register(shutil.rmtree, WORK_ROOT, ignore_errors=True)
    directory = WORK_ROOT / name
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    return directory.resolve()


@dataclass
class Term:
    """One command the editor runs for the agent."""

    process: asyncio.subprocess.Process
    limit: Optional[int]
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: Optional["asyncio.Task[None]"] = None

    async def read(self) -> None:
        assert self.process.stdout is not None
        while True:
            chunk = await self.process.stdout.read(65536)
            if not chunk:
                return
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                # Trimmed from the front, at a character boundary.
                cut = len(self.output) - self.limit
                while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:
                    cut += 1
                del self.output[:cut]
                self.truncated = True

    def exit_status(self) -> Optional[Dict[str, Any]]:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}

    async def wait(self) -> Dict[str, Any]:
        await self.process.wait()
        if self.reader is not None:
            await self.reader
        status = self.exit_status()
        assert status is not None
        return status

    def kill(self) -> None:
        if self.process.returncode is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Editor:
    """See the module doc."""

    def __init__(self) -> None:
        self.terminals: Dict[str, Term] = {}
        self._next_terminal = 0
        self.elicitations: Deque[Dict[str, Any]] = deque()
        """The results ``elicitation/create`` is answered with, in order (``{"action": ...}``)."""
        self.elicited: List[Dict[str, Any]] = []
        """Every ``elicitation/create`` received: its message and mode."""
        self.completed: List[str] = []
        """The ids of every ``elicitation/complete`` received."""
        self.failures: Dict[str, Tuple[int, str, Any]] = {}
        """Methods whose next call fails with ``(code, message, data)``."""
        self.served: List[Tuple[str, str]] = []
        """Every ``terminal/*`` call served, with its terminal id, in order."""
        self.reaped: List[str] = []
        """Terminals whose process has exited and was reaped (on release, or when it ended)."""

    def fail_next(self, method: str, code: int, message: str, data: Any = None) -> None:
        """The next call of ``method`` fails with this JSON-RPC error."""
        self.failures[method] = (code, message, data)

    def _check(self, method: str) -> None:
        failure = self.failures.pop(method, None)
        if failure is not None:
            raise RequestError(*failure)

    # ---- fs/* ----------------------------------------------------------------------------------

    async def read_text_file(self, path: str, line: Optional[int], limit: Optional[int]) -> str:
        self._check("fs/read_text_file")
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise RequestError(-32002, f"Resource not found: {path}", {"uri": path, "reason": e.strerror}) from None
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        end = len(lines) if limit is None else start + limit
        return "".join(lines[start:end])

    async def write_text_file(self, path: str, content: str) -> None:
        self._check("fs/write_text_file")
        try:
            Path(path).write_text(content, encoding="utf-8")
        except OSError as e:
            raise RequestError(-32603, f"cannot write {path}: {e.strerror}") from None

    # ---- terminal/* ----------------------------------------------------------------------------

    def _term(self, method: str, terminal_id: str) -> Term:
        self.served.append((method, terminal_id))
        term = self.terminals.get(terminal_id)
        if term is None:
            raise RequestError(-32002, f"unknown terminal {terminal_id}", {"terminalId": terminal_id})
        return term

    async def create_terminal(
        self, command: str, args: List[str], env: Dict[str, str], cwd: Optional[str], output_byte_limit: Optional[int]
    ) -> str:
        self._check("terminal/create")
        try:
            process = await asyncio.create_subprocess_exec(
                command,
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=cwd,
                env={**os.environ, **env},
                start_new_session=True,
            )
        except OSError as e:
            raise RequestError(-32603, f"cannot run {command}: {e.strerror}") from None
        self._next_terminal += 1
        terminal_id = f"term-{self._next_terminal}"
        term = Term(process, output_byte_limit)
        term.reader = asyncio.get_running_loop().create_task(term.read())
        self.terminals[terminal_id] = term
        self.served.append(("terminal/create", terminal_id))
        return terminal_id

    async def terminal_output(self, terminal_id: str) -> Dict[str, Any]:
        term = self._term("terminal/output", terminal_id)
        out: Dict[str, Any] = {"output": term.output.decode("utf-8", errors="replace"), "truncated": term.truncated}
        status = term.exit_status()
        if status is not None:
            if term.reader is not None:
                await term.reader
            out["output"] = term.output.decode("utf-8", errors="replace")
            out["exitStatus"] = status
        return out

    async def wait_for_terminal_exit(self, terminal_id: str) -> Dict[str, Any]:
        return await self._term("terminal/wait_for_exit", terminal_id).wait()

    async def kill_terminal(self, terminal_id: str) -> None:
        self._term("terminal/kill", terminal_id).kill()

    async def release_terminal(self, terminal_id: str) -> None:
        term = self._term("terminal/release", terminal_id)
        del self.terminals[terminal_id]
        term.kill()
        await term.wait()
        self.reaped.append(terminal_id)

    def running(self) -> List[str]:
        """The terminals not released yet."""
        return list(self.terminals)

    async def close(self) -> None:
        """Kills and reaps whatever the agent left running (a scenario that failed half-way)."""
        for term in self.terminals.values():
            term.kill()
            await term.wait()
        self.terminals.clear()

    # ---- elicitation/* -------------------------------------------------------------------------

    async def create_elicitation(self, message: str, mode: Dict[str, Any]) -> Dict[str, Any]:
        self._check("elicitation/create")
        self.elicited.append({"message": message, **mode})
        if not self.elicitations:
            raise RequestError(-32603, "the scenario queued no answer for this elicitation")
        return self.elicitations.popleft()

    async def complete_elicitation(self, elicitation_id: str) -> None:
        self.completed.append(elicitation_id)
