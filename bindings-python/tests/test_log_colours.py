"""Logs on stderr carry ANSI colour codes only for a person at a terminal: the Python binding's
log set-up (``acp_facade._native`` at import) writes plain text to a pipe, as an editor's agent log
or a file gets it, and honours ``NO_COLOR`` on a terminal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Dict, Optional

from conftest import DEMO

ESC = "\x1b["
"""The start of every ANSI escape sequence the log formatter writes."""

# A stray response (logged as a warning by the protocol layer), then a session (an info line), then
# the end of input: the demo exits.
STDIN = "".join(
    json.dumps(message) + "\n"
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": "never-sent", "result": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}},
    )
)


def _env(no_color: Optional[str]) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["ACP_FACADE_LOG"] = "info"
    if no_color is not None:
        env["NO_COLOR"] = no_color
    return env


def test_logs_reach_a_pipe_without_colour_codes() -> None:
    done = subprocess.run(
        [sys.executable, DEMO, "--store", ":memory:"],
        input=STDIN,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(None),
    )
    assert done.returncode == 0, done.stderr
    assert "WARN" in done.stderr and "never sent" in done.stderr and "session created" in done.stderr, done.stderr
    assert ESC not in done.stderr, repr(done.stderr)


def _on_a_terminal(no_color: Optional[str]) -> str:
    """What the demo writes to a pseudo-terminal (``script`` from util-linux) for the same input."""
    assert shutil.which("script"), "script (util-linux) runs the demo on a pseudo-terminal"
    command = f"{sys.executable} {DEMO} --store :memory: 2>&1 >/dev/null"
    done = subprocess.run(
        ["script", "--quiet", "--return", "--command", command, "/dev/null"],
        input=STDIN,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(no_color),
    )
    assert "never sent" in done.stdout, done
    return done.stdout


def test_a_terminal_gets_colours_unless_no_color_is_set() -> None:
    assert ESC in _on_a_terminal(None), "a person at a terminal sees colours"
    assert ESC not in _on_a_terminal("1"), "NO_COLOR=1 turns them off"
