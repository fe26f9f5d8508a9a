"""The Python demo's ``--listen``, ``--token``, ``--allow-origin`` and ``--tls-cert``/``--tls-key``
(docs/DEMO.md), as the Rust demo has them: bad command lines exit 2 with one line on stderr (the
Rust demo's message); a listening demo prints exactly one ``listening on URL`` line (``https://``
over TLS), serves over HTTP and WebSocket under its rules, and ends with status 0 on SIGTERM, a
turn running included; TLS files it cannot use end it with status 1, the file named."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from conftest import DEMO, run
from remote_client import bearer, http_connection, said, self_signed, trusting, ws_connection
from test_remote import initialize_status

PROG = "acp_facade.demo"


def demo_command(*args: str) -> List[str]:
    return [sys.executable, str(DEMO), "--store", ":memory:", *args]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen"], "--listen needs HOST:PORT"),
        (["--listen", "no-port"], '--listen must be HOST:PORT, got "no-port"'),
        (["--listen", "::1:0"], '--listen must be HOST:PORT, got "::1:0"'),
        (["--token", "alice:s3cret"], "--token, --allow-origin and --tls-cert/--tls-key need --listen"),
        (["--allow-origin", "https://editor.example"], "--token, --allow-origin and --tls-cert/--tls-key need --listen"),
        (["--tls-cert", "c.pem", "--tls-key", "k.pem"], "--token, --allow-origin and --tls-cert/--tls-key need --listen"),
        (["--listen", "127.0.0.1:0", "--tls-cert"], "--tls-cert needs a file"),
        (["--listen", "127.0.0.1:0", "--tls-key"], "--tls-key needs a file"),
        (["--listen", "127.0.0.1:0", "--tls-cert", "c.pem"], "--tls-cert and --tls-key go together: give both or neither"),
        (["--listen", "127.0.0.1:0", "--tls-key", "k.pem"], "--tls-cert and --tls-key go together: give both or neither"),
        (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together: give both or neither"),
        (["--listen", "127.0.0.1:0", "--token"], "--token needs NAME:SECRET"),
        (["--listen", "127.0.0.1:0", "--token", "no-colon"], '--token must be NAME:SECRET, got "no-colon"'),
        (["--listen", "127.0.0.1:0", "--token", ":secret"], '--token must be NAME:SECRET, got ":secret"'),
        (["--listen", "127.0.0.1:0", "--allow-origin"], "--allow-origin needs an origin"),
        (["--listen", "0.0.0.0:0"], "--listen 0.0.0.0:0 is not a loopback address: give at least one --token"),
    ],
)
def test_bad_remote_command_lines_exit_2_with_the_rust_demo_s_line(args: List[str], message: str) -> None:
    out = subprocess.run(demo_command(*args), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    assert out.stderr == f"{PROG}: {message} (see --help)\n"


def test_the_usage_names_the_remote_options_as_the_rust_demo_does() -> None:
    out = subprocess.run([sys.executable, str(DEMO), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == ""
    for line in (
        "[--listen HOST:PORT [--token NAME:SECRET]... [--allow-origin ORIGIN]...\n"
        "                        [--tls-cert FILE --tls-key FILE]]",
        "  --listen HOST:PORT",
        "  --token NAME:SECRET",
        "  --allow-origin ORIGIN",
        "  --tls-cert FILE --tls-key FILE",
        "private key (both or neither); the URL printed is then https://",
        "stderr when ready; SIGTERM shuts down gracefully",
    ):
        assert line in out.stdout, line


class Listening:
    """A demo started with ``--listen 127.0.0.1:0`` and ``args``, its URL once it said it."""

    def __init__(self, *args: str, scheme: str = "http") -> None:
        self.process = subprocess.Popen(
            demo_command("--listen", "127.0.0.1:0", *args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        found = re.fullmatch(rf"listening on ({scheme}://127\.0\.0\.1:(\d+)/acp)\n", line)
        assert found is not None and found.group(2) != "0", line
        self.url = found.group(1)

    def terminate(self) -> Tuple[int, str, str]:
        """SIGTERM; the exit status, then the rest of stdout and stderr."""
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


@pytest.fixture
def listening() -> Iterator[Listening]:
    demo = Listening("--token", "alice:s3cret", "--token", "bob:b0b", "--allow-origin", "https://editor.example")
    yield demo
    if demo.process.poll() is None:
        demo.process.kill()
        demo.process.wait()


def test_a_listening_demo_serves_under_its_rules_and_ends_with_0_on_sigterm(listening: Listening) -> None:
    url = listening.url

    async def body() -> None:
        assert await initialize_status(url, {}) == 401
        assert await initialize_status(url, bearer("nope")) == 401
        assert await initialize_status(url, {**bearer("s3cret"), "origin": "https://evil.example"}) == 403
        assert await initialize_status(url, {**bearer("s3cret"), "origin": "https://editor.example"}) == 200
        async with http_connection(url, token="s3cret") as (alice, answer):
            assert answer["result"]["agentInfo"]["name"] == "acp-facade-demo"
            session = await alice.new_session()
            mark = len(alice.seen)
            assert (await alice.prompt(session, "stream 2"))["result"]["stopReason"] == "end_turn"
            assert said(alice.seen[mark:]) == "t1 t2 "
            async with ws_connection(url, token="b0b") as (bob, _):
                assert (await bob.request("session/list", {}))["result"]["sessions"] == []

    run(body)
    status, out, err = listening.terminate()
    assert status == 0, err
    assert err == "", "nothing more on stderr after the ready line"
    assert out == "", "nothing on stdout"


def test_sigterm_with_a_turn_running_lets_it_end_then_exits_0(listening: Listening) -> None:
    url = listening.url

    async def permission(params: Dict[str, Any]) -> Dict[str, Any]:
        # The turn waits for this answer: SIGTERM now, and answer once the shutdown has begun
        # (new connections are refused), as an editor would still answer its user's choice.
        listening.process.send_signal(signal.SIGTERM)
        while await initialize_status(url, bearer("s3cret")) != 503:
            await asyncio.sleep(0.01)
        allow = next(o for o in params["options"] if o["kind"] == "allow_once")
        return {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}

    async def body() -> Dict[str, Any]:
        handlers = {"session/request_permission": permission}
        async with http_connection(url, token="s3cret", handlers=handlers) as (conn, _):
            session = await conn.new_session()
            mark = len(conn.seen)
            answer = await conn.prompt(session, "tool saw")
            assert said(conn.seen[mark:]) == "saw: done"
            return answer

    assert run(body)["result"]["stopReason"] == "end_turn"
    status, out, err = listening.process.wait(timeout=60), *listening.process.communicate(timeout=60)
    assert status == 0, err
    assert out == "" and err == ""


def test_a_demo_with_tls_listens_on_https_and_serves_https_and_wss(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    demo = Listening("--tls-cert", str(cert), "--tls-key", str(key), scheme="https")
    try:

        async def body() -> None:
            async with http_connection(demo.url, tls=trusting(cert)) as (conn, answer):
                assert answer["result"]["agentInfo"]["name"] == "acp-facade-demo"
                session = await conn.new_session()
                mark = len(conn.seen)
                assert (await conn.prompt(session, "stream 2"))["result"]["stopReason"] == "end_turn"
                assert said(conn.seen[mark:]) == "t1 t2 "
            async with ws_connection(demo.url, tls=trusting(cert)) as (_, answer):
                assert answer["result"]["protocolVersion"] == 1

        run(body)
        status, out, err = demo.terminate()
        assert status == 0, err
        assert out == "" and err == ""
    finally:
        if demo.process.poll() is None:
            demo.process.kill()
            demo.process.wait()


def test_tls_files_the_demo_cannot_use_end_it_with_1_naming_the_file(tmp_path: Path) -> None:
    cert, _ = self_signed(tmp_path)
    missing = tmp_path / "no-such-key.pem"
    args = ("--listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(missing))
    out = subprocess.run(demo_command(*args), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert out.stdout == ""
    assert "cannot serve" in out.stderr and str(missing) in out.stderr, out.stderr
    assert "listening on" not in out.stderr
