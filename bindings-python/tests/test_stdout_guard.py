"""The stdout guard: a host that ``print()``s during a turn never corrupts the protocol stream.

When ``serve_stdio`` starts, the core keeps the real stdout for the protocol and points fd 1 (where
``print`` writes) at stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_HOST = textwrap.dedent(
    """
    import asyncio, sys
    from acp_facade import MemoryStore, Runner, StopReason, Turn, TurnRunner

    class Noisy(TurnRunner):
        async def run_turn(self, turn: Turn) -> StopReason:
            print("STRAY OUTPUT from a host:", turn.prompt_text(), flush=True)
            await turn.text(turn.prompt_text())
            print("MORE STRAY OUTPUT")
            return StopReason.END_TURN

    async def main() -> None:
        runner = Runner(MemoryStore(), Noisy())
        await runner.agent(runner.options()).serve_stdio()

    asyncio.run(main())
    """
)


def test_prints_in_a_turn_go_to_stderr_not_the_protocol_stream() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", _HOST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    def until(request_id: int) -> list:
        assert process.stdout is not None
        seen = []
        while True:
            line = process.stdout.readline()
            assert line, "the agent closed stdout"
            message = json.loads(line)  # a non-protocol line fails here
            seen.append(message)
            if message.get("id") == request_id and "method" not in message:
                return seen

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    until(1)
    send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})
    session = until(2)[-1]["result"]["sessionId"]
    prompt = [{"type": "text", "text": "hello"}]
    send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": prompt}})
    turn = until(3)
    assert turn[-1]["result"]["stopReason"] == "end_turn"
    assert any(m.get("params", {}).get("update", {}).get("content", {}).get("text") == "hello" for m in turn)
    out, err = process.communicate(timeout=30)
    assert out.strip() == b"", f"nothing but protocol on stdout: {out!r}"
    assert process.returncode == 0
    assert b"STRAY OUTPUT from a host: hello" in err
    assert b"MORE STRAY OUTPUT" in err
