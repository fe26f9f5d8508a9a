"""Exit stress: the Python demo agent started and ended 30 times (idle, mid-stream, and
mid-stream under CPU load) exits 0 every time, with no crash at interpreter exit."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
from typing import Iterator

import pytest

from conftest import DEMO

_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
_NEW = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _run_once(mid_stream: bool, wait: float) -> None:
    process = subprocess.Popen(
        [sys.executable, str(DEMO), "--store", ":memory:"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    for line in (_INIT, _NEW):
        process.stdin.write((json.dumps(line) + "\n").encode())
    process.stdin.flush()
    process.stdout.readline()
    session = json.loads(process.stdout.readline())["result"]["sessionId"]
    if mid_stream:
        prompt = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "stream 100000"}]},
        }
        process.stdin.write((json.dumps(prompt) + "\n").encode())
        process.stdin.flush()
        # Read a little of the stream, then hang up while it is still running.
        for _ in range(50):
            process.stdout.readline()
        time.sleep(wait)
    _, err = process.communicate(timeout=30)  # closes stdin: the client hangs up
    assert process.returncode == 0, err.decode(errors="replace")
    assert b"panicked" not in err and b"Fatal Python error" not in err, err.decode(errors="replace")


@pytest.fixture
def cpu_load() -> Iterator[None]:
    workers = [multiprocessing.Process(target=_spin, args=(60,), daemon=True) for _ in range(2)]
    for w in workers:
        w.start()
    try:
        yield
    finally:
        for w in workers:
            w.terminate()
            w.join()


@pytest.mark.timeout(120)
def test_exit_idle_and_mid_stream() -> None:
    for _ in range(10):
        _run_once(mid_stream=False, wait=0)
    for i in range(10):
        _run_once(mid_stream=True, wait=(i % 4) * 0.05)


@pytest.mark.timeout(120)
def test_exit_mid_stream_under_cpu_load(cpu_load: None) -> None:
    for i in range(10):
        _run_once(mid_stream=True, wait=(i % 3) * 0.05)
