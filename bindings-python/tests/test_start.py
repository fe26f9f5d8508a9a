"""Start-up: ``Agent.run_stdio`` serves before asyncio is imported, and importing the package (or
the demo) does not import asyncio — the ~35 ms an agent would otherwise spend before it can answer
``initialize``."""

from __future__ import annotations

import ast
import importlib
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import acp_facade
from conftest import DEMO

# Runs the demo's `main` with the import of asyncio held until the file $GATE exists: whatever the
# agent answers meanwhile, it answered before asyncio was loaded.
_GATED_DEMO = """
import os, sys, time

class Gate:
    def find_spec(self, name, path=None, target=None):
        if name == "asyncio":
            print("asyncio import held", file=sys.stderr, flush=True)
            deadline = time.monotonic() + 60
            while not os.path.exists(os.environ["GATE"]) and time.monotonic() < deadline:
                time.sleep(0.005)
        return None

sys.meta_path.insert(0, Gate())
sys.path.insert(0, os.path.dirname(os.environ["DEMO"]))
sys.argv = [os.environ["DEMO"], "--store", ":memory:"]
import demo_host
sys.exit(demo_host.main())
"""


def _send(process: "subprocess.Popen[bytes]", message: Dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def _receive(process: "subprocess.Popen[bytes]", timeout: float = 20.0) -> Dict[str, Any]:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no message within {timeout} s"
    line = process.stdout.readline()
    assert line, "the agent closed stdout"
    return json.loads(line)


def test_the_package_and_the_demo_import_without_asyncio() -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import acp_facade; ok = 'asyncio' not in sys.modules; "
        "import demo_host; print(ok, 'asyncio' not in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(Path(DEMO).parent)], capture_output=True, check=True)
    assert out.stdout.split() == [b"True", b"True"], out.stderr.decode(errors="replace")


# What an agent's start-up must not import before it serves: asyncio (~35 ms of CPU),
# dataclasses with inspect (~7 ms; the package's records are made at their first use,
# acp_facade._record; acp_facade._coro), logging (the demo's logger is set up when first used),
# typing with re (~4 ms; typing names are imported for type checkers only, the type aliases made
# when first looked up; the demo compiles its patterns at first use).
_NOT_BEFORE_SERVING = ("asyncio", "dataclasses", "inspect", "logging", "re", "typing")

_START_PATH = """
import sys
sys.path.insert(0, sys.argv[1])
import acp_facade
after_import = sorted(set(sys.argv[2:]) & set(sys.modules))
import demo_host
after_demo = sorted(set(sys.argv[2:]) & set(sys.modules))
# Everything `main` does before `run_stdio`, with every option the demo has.
agent = demo_host.demo_agent(demo_host.open_store(":memory:"), 50, True)
after_build = sorted(set(sys.argv[2:]) & set(sys.modules))
print(after_import, after_demo, after_build)
"""


def test_the_start_path_imports_none_of_what_serving_does_not_need() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _START_PATH, str(Path(DEMO).parent), *_NOT_BEFORE_SERVING],
        capture_output=True,
        check=True,
    )
    assert out.stdout.decode().split() == ["[]"] * 3, out.stdout.decode() + out.stderr.decode(errors="replace")


def test_the_type_aliases_are_those_type_checkers_see() -> None:
    # Each alias is written twice: for type checkers under `if TYPE_CHECKING:`, and in its module's
    # `__getattr__`, which makes it when looked up (typing is not imported before).
    import typing

    seen = set()
    for name in ("acp", "client", "extensions", "harness", "remote"):
        module = importlib.import_module(f"acp_facade.{name}")
        tree = ast.parse(Path(str(module.__file__)).read_text())
        written = {
            stmt.targets[0].id: stmt.value
            for node in tree.body
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for stmt in node.body
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
        }
        made = {alias: getattr(module, alias) for alias in written}
        namespace = {**vars(typing), **vars(module), **made}
        for alias, expression in written.items():
            assert made[alias] == eval(compile(ast.Expression(expression), alias, "eval"), namespace), alias
            assert getattr(acp_facade, alias) is made[alias], alias
            assert alias in acp_facade.__all__ and alias in dir(acp_facade), alias
        seen.update(written)
    assert seen == set(vars(acp_facade)["_ALIASES"])
    assert len(seen) == 11
    # Each alias is still what it was for a caller: a typing alias that isinstance understands.
    assert isinstance(acp_facade.TextContent("hi"), typing.get_args(acp_facade.PromptBlock))
    assert typing.get_origin(acp_facade.Meta) is dict


def test_run_stdio_answers_initialize_before_asyncio_then_serves_what_waited(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    env = dict(os.environ, GATE=str(gate), DEMO=str(DEMO))
    # Unbuffered: `select` sees what the pipe holds, and `readline` never reads past one line into
    # a buffer `select` cannot see.
    process = subprocess.Popen(
        [sys.executable, "-c", _GATED_DEMO],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        bufsize=0,
    )
    try:
        _send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        init = _receive(process)
        assert init["id"] == 1 and init["result"]["protocolVersion"] == 1
        assert init["result"]["agentInfo"]["name"] == "acp-facade-demo"
        assert not gate.exists()

        # Sent while asyncio is still held: the session and the turn wait for the loop, in order.
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})
        gate.touch()
        new = _receive(process)
        assert new["id"] == 2, new
        session = new["result"]["sessionId"]
        prompt = [{"type": "text", "text": "hello world"}]
        _send(process, {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": prompt}})
        chunks = []
        while True:
            message = _receive(process)
            if message.get("id") == 3:
                assert message["result"]["stopReason"] == "end_turn", message
                break
            update = message["params"]["update"]
            if update["sessionUpdate"] == "agent_message_chunk":
                chunks.append(update["content"]["text"])
        assert "".join(chunks) == "hello world"
    finally:
        _, err = process.communicate(timeout=30)  # closes stdin: the client hangs up
    assert process.returncode == 0, err.decode(errors="replace")
    assert b"asyncio import held" in err, err.decode(errors="replace")
