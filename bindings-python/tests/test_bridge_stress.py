"""Bridge stress: many host calls in flight at once are all answered.

Regression test for a lost wake-up in the Rust→asyncio bridge: ``bridge_drain`` cleared its
``woken`` flag before emptying the wake-up socket, so a call queued in between left the flag set
with no byte to wake the loop, and every later host call hung. It showed with 64 concurrent
``session/new`` requests (the callback benchmark of ``scripts/bench``) in about half the runs of
3,000 requests; five agents of 3,000 requests here catch it almost always (each takes well under a
second when nothing hangs).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

HOST = """
import asyncio, itertools
from acp_facade import Agent, LiveSession, Options, SessionHost

class Idle(LiveSession):
    async def submit(self, prompt): raise NotImplementedError
    async def interrupt(self): return None
    async def respond_gate(self, gate_id, response): return None

class Host(SessionHost):
    ids = itertools.count(1)
    async def new_session(self, setup): return Idle(f"s-{next(self.ids)}")

asyncio.run(Agent(Options(Host(), max_sessions=1_000_000)).serve_stdio())
"""

REQUESTS = 3000
IN_FLIGHT = 64
DEADLINE_S = 30.0


def _request(i: int) -> bytes:
    message = {"jsonrpc": "2.0", "id": i, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}
    return (json.dumps(message) + "\n").encode()


def _concurrent_session_news() -> None:
    process = subprocess.Popen([sys.executable, "-c", HOST], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    deadline = time.monotonic() + DEADLINE_S
    buffered = b""

    def line() -> bytes:
        nonlocal buffered
        while b"\n" not in buffered:
            ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no answer within {DEADLINE_S} s: a host call hung"
            chunk = os.read(process.stdout.fileno(), 65536)  # type: ignore[union-attr]
            assert chunk, "the agent closed its stdout"
            buffered += chunk
        first, buffered = buffered.split(b"\n", 1)
        return first

    try:
        process.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n')
        process.stdin.flush()
        assert b'"result"' in line()
        sent = answered = 0
        while answered < REQUESTS:
            batch = b""
            while sent < REQUESTS and sent - answered < IN_FLIGHT:
                sent += 1
                batch += _request(sent)
            if batch:
                process.stdin.write(batch)
                process.stdin.flush()
            reply = json.loads(line())
            assert "result" in reply, reply
            answered += 1
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()


def test_64_concurrent_host_calls_are_all_answered() -> None:
    for _ in range(5):
        _concurrent_session_news()
