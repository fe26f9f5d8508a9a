"""The transports a scenario runs over, and an agent served remotely.

``stdio``: the agent is the subprocess the client talks to (``wire.Peer``). ``http`` and ``ws``: the
agent is started with ``--listen 127.0.0.1:0`` (docs/DEMO.md: it prints ``listening on
http://HOST:PORT/acp`` on stderr when ready) and the client talks to the relay
(``tests/remote-relay/relay.mjs``), a Node process that forwards every line through the official
TypeScript SDK's remote client stream — Streamable HTTP or WebSocket — and writes every message from
the agent back as a line. So the transcript is recorded at the relay's pipes, exactly as over stdio.

Invariants: a remote agent is stopped with SIGTERM and must exit 0; it writes nothing on stdout
(stdout is not its protocol channel when it listens); its stderr, listening line included, lands
in the run's ``stderr-N.txt`` as over stdio, and the relay's in ``relay-N.txt``.

``ACP_CONFORMANCE_TRANSPORTS=stdio,http`` restricts a run (default: all three);
``ACP_CONFORMANCE_REQUIRE_TRANSPORTS=stdio,http,ws`` makes a missing prerequisite of a named
transport (Node, the relay's ``npm ci``) fail the run instead of skipping its tests.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .agents import ROOT

STDIO, HTTP, WS = "stdio", "http", "ws"
TRANSPORTS: Tuple[str, ...] = (STDIO, HTTP, WS)
"""Every transport, the reference (whose transcript the others are compared with) first."""
REMOTE: Tuple[str, ...] = (HTTP, WS)

HTTP_CONNECTION = (
    "Streamable HTTP makes a connection with its initialize POST: the SDK's HTTP client sends "
    "nothing before it, and the transport refuses a second initialize on a connection (400) before "
    "the agent sees it"
)
"""Why a scenario sending ``initialize`` late, twice or not at all does not run over http."""

RELAY_DIR = ROOT / "tests" / "remote-relay"
RELAY = RELAY_DIR / "relay.mjs"

LISTENING = re.compile(r"^listening on (http://\S+/acp)\s*$")
"""The line a demo prints on stderr once it serves (docs/DEMO.md, ``--listen``)."""

STOP_TIMEOUT = 20.0
"""How long a remote agent may take to exit after SIGTERM (the shutdown's grace included)."""


@dataclass(frozen=True)
class Transport:
    """One transport: ``relay`` is the argv prefix of the relay (``None`` for stdio), ``missing``
    why it cannot run here."""

    name: str
    relay: Optional[Tuple[str, ...]] = None
    missing: Optional[str] = None

    @property
    def available(self) -> bool:
        """Whether its prerequisites are here (always, for stdio)."""
        return self.missing is None

    @property
    def remote(self) -> bool:
        """Whether the agent listens and the client talks to the relay."""
        return self.name != STDIO


def _relay() -> Tuple[Optional[Tuple[str, ...]], Optional[str]]:
    node = shutil.which("node")
    if node is None:
        return None, "node is not on PATH (the relay is a Node program)"
    if not (RELAY_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json").is_file():
        return None, "the relay's dependencies are not installed (npm ci in tests/remote-relay)"
    return (node, str(RELAY)), None


def locate() -> List[Transport]:
    """Every transport of ``TRANSPORTS`` (restricted by ``ACP_CONFORMANCE_TRANSPORTS``)."""
    only = _names("ACP_CONFORMANCE_TRANSPORTS")
    unknown = set(only) - set(TRANSPORTS)
    assert not unknown, f"ACP_CONFORMANCE_TRANSPORTS names unknown transports {sorted(unknown)} (known: {TRANSPORTS})"
    relay, missing = _relay()
    found = []
    for name in TRANSPORTS:
        if only and name not in only:
            continue
        if name == STDIO:
            found.append(Transport(name))
        else:
            found.append(Transport(name, relay, missing))
    return found


def required() -> List[str]:
    """Transports that must be available (``ACP_CONFORMANCE_REQUIRE_TRANSPORTS=stdio,http,ws``)."""
    names = _names("ACP_CONFORMANCE_REQUIRE_TRANSPORTS")
    unknown = set(names) - set(TRANSPORTS)
    assert not unknown, f"ACP_CONFORMANCE_REQUIRE_TRANSPORTS names unknown transports {sorted(unknown)}"
    return names


def _names(variable: str) -> List[str]:
    return [n.strip() for n in os.environ.get(variable, "").split(",") if n.strip()]


class NotListening(AssertionError):
    """The agent did not print its listening line (it may not support ``--listen``)."""


class RemoteAgent:
    """One agent process serving ACP on ``url`` (started by :func:`listen`)."""

    def __init__(self, process: asyncio.subprocess.Process, url: str, stdout: Path, copier: "asyncio.Task[None]") -> None:
        self.process = process
        self.url = url
        self._stdout = stdout
        self._copier = copier

    def kill(self) -> None:
        """``SIGKILL`` (the process and its group)."""
        if self.process.returncode is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def stop(self, problems: List[str], index: int) -> int:
        """``SIGTERM``, then its exit status (killed after :data:`STOP_TIMEOUT`: ``-9``, a problem).
        A byte on stdout is a problem too."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
        except asyncio.TimeoutError:
            self.kill()
            await self.process.wait()
            problems.append(f"p{index}: the listening agent did not exit within {STOP_TIMEOUT}s of SIGTERM; killed")
            code = -9
        await self.reaped()
        written = self._stdout.read_bytes() if self._stdout.exists() else b""
        if written:
            problems.append(f"p{index}: the listening agent wrote to stdout: {written[:300]!r}")
        return code

    async def reaped(self) -> None:
        """Waits for the process to be gone and its stderr copied."""
        await self.process.wait()
        await self._copier


async def listen(
    name: str, argv: Sequence[str], env: Dict[str, str], cwd: Path, stderr: Path, stdout: Path, timeout: float
) -> RemoteAgent:
    """Starts ``argv --listen 127.0.0.1:0`` and waits for its listening line; its stderr is copied
    to ``stderr`` as it comes. Raises :class:`NotListening` when it exits (or stays silent) first."""
    with open(stdout, "wb") as out:
        process = await asyncio.create_subprocess_exec(
            *argv,
            "--listen",
            "127.0.0.1:0",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=str(cwd),
            start_new_session=True,
        )
    assert process.stderr is not None
    url: "asyncio.Future[str]" = asyncio.get_running_loop().create_future()
    seen: List[bytes] = []

    async def copy() -> None:
        assert process.stderr is not None
        with open(stderr, "wb") as sink:
            while True:
                line = await process.stderr.readline()
                if not line:
                    break
                sink.write(line)
                sink.flush()
                if not url.done():
                    seen.append(line)
                    match = LISTENING.match(line.decode("utf-8", errors="replace"))
                    if match:
                        url.set_result(match.group(1))
        if not url.done():
            url.set_exception(EOFError())

    copier = asyncio.get_running_loop().create_task(copy())
    try:
        found = await asyncio.wait_for(asyncio.shield(url), timeout)
    except (EOFError, asyncio.TimeoutError) as e:
        if process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        code = await process.wait()
        await copier
        text = b"".join(seen).decode("utf-8", errors="replace").strip()
        if isinstance(e, asyncio.TimeoutError):
            raise NotListening(
                f"the {name} demo printed no `listening on http://…/acp` line within {timeout}s of "
                f"--listen 127.0.0.1:0 (stderr: {text[-600:]!r})"
            ) from None
        if code == 2:
            raise NotListening(
                f"the {name} demo does not support --listen: it rejected the command line "
                f"(exit status 2) instead of listening; its stderr: {text[-600:]!r}"
            ) from None
        raise NotListening(
            f"the {name} demo exited with status {code} before printing `listening on http://…/acp`; "
            f"its stderr: {text[-600:]!r}"
        ) from None
    return RemoteAgent(process, found, stdout, copier)
