"""``Agent.serve_http``: a Python agent served over Streamable HTTP and WebSocket, driven over the
wire by a client (remote_client.py) as an editor would: turns, the host's calls to the client, the
token verifier (async or plain, and failing), origins, principals' sessions, a graceful
shutdown with a turn running, TLS (HTTPS and WSS with a certificate made by the test), the
connection limit, the keepalive comment and the hang-up of a client that stops reading."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import httpx
import pytest
import websockets.asyncio.client
import websockets.exceptions

from acp_facade import MemoryStore, Options, RemoteServer, Runner, StopReason, Turn, serve_http
from acp_facade.demo import Script, command_text

from conftest import run
from remote_client import (
    CONNECTIONS,
    HttpConnection,
    bearer,
    http_connection,
    initialize_params,
    said,
    self_signed,
    trusting,
    ws_connection,
)

TRANSPORTS = sorted(CONNECTIONS)
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


class Gated(Script):
    """The demo's script, plus ``gate``: a turn that waits for the test to open the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.gate = asyncio.Event()

    async def run_turn(self, turn: Turn) -> StopReason:
        if command_text(turn.prompt()) != "gate":
            return await super().run_turn(turn)
        self.started.set()
        await self.gate.wait()
        await turn.text("finished")
        return StopReason.END_TURN


def demo_runner() -> Runner:
    return Runner(MemoryStore(), Gated())


async def verify(token: str) -> Optional[str]:
    return {"s3cret": "alice", "b0b": "bob"}.get(token)


async def initialize_status(url: str, headers: Dict[str, str]) -> int:
    async with httpx.AsyncClient(timeout=30) as client:
        return (await client.post(url, json=INITIALIZE, headers=headers)).status_code


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_prompt_turn_is_served_over_each_transport(transport: str) -> None:
    async def body() -> None:
        async with await demo_runner().agent().serve_http("127.0.0.1:0") as server:
            host, port = server.local_address
            assert host == "127.0.0.1" and port != 0
            assert server.url == f"http://127.0.0.1:{port}/acp"
            assert server.connections == 0
            async with CONNECTIONS[transport](server.url) as (conn, answer):
                assert answer["result"]["protocolVersion"] == 1
                assert answer["result"]["agentCapabilities"]["loadSession"] is True
                assert server.connections == 1
                session = await conn.new_session()
                before = len(conn.seen)
                answer = await conn.prompt(session, "stream 3")
                assert answer["result"]["stopReason"] == "end_turn"
                assert said(conn.seen[before:]) == "t1 t2 t3 "

    run(body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_turn_s_calls_to_the_client_go_over_the_remote_connection(transport: str, tmp_path: Any) -> None:
    asked: List[Dict[str, Any]] = []
    read: List[str] = []

    async def permission(params: Dict[str, Any]) -> Dict[str, Any]:
        asked.append(params)
        allow = next(o for o in params["options"] if o["kind"] == "allow_once")
        return {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}

    async def read_file(params: Dict[str, Any]) -> Dict[str, Any]:
        read.append(params["path"])
        return {"content": "from the editor"}

    handlers = {"session/request_permission": permission, "fs/read_text_file": read_file}

    async def body() -> None:
        async with await demo_runner().agent().serve_http() as server:
            async with CONNECTIONS[transport](server.url, handlers=handlers, fs=True) as (conn, _):
                session = await conn.new_session()
                mark = len(conn.seen)
                assert (await conn.prompt(session, "tool hammer"))["result"]["stopReason"] == "end_turn"
                assert said(conn.seen[mark:]) == "hammer: done"
                mark = len(conn.seen)
                assert (await conn.prompt(session, "read /tmp/notes.txt"))["result"]["stopReason"] == "end_turn"
                assert said(conn.seen[mark:]) == "from the editor"

    run(body)
    assert [a["toolCall"]["title"] for a in asked] == ["hammer"]
    assert read == ["/tmp/notes.txt"]


def test_a_token_verifier_refuses_with_401_and_names_the_principal() -> None:
    async def body() -> None:
        async with await demo_runner().agent().serve_http(token_verifier=verify) as server:
            for headers in ({}, bearer("wrong"), {"authorization": "Basic s3cret"}):
                assert await initialize_status(server.url, headers) == 401, headers
            assert await initialize_status(server.url, bearer("s3cret")) == 200
            async with ws_connection(server.url, token="b0b") as (_, answer):
                assert answer["result"]["protocolVersion"] == 1

    run(body)


def test_a_plain_function_verifies_too() -> None:
    async def body() -> None:
        tokens = {"t0k": "carol"}
        async with await demo_runner().agent().serve_http(token_verifier=tokens.get) as server:
            assert await initialize_status(server.url, bearer("nope")) == 401
            assert await initialize_status(server.url, bearer("t0k")) == 200

    run(body)


def test_a_verifier_that_raises_or_answers_a_non_name_refuses_with_401_and_is_logged(caplog: Any) -> None:
    answers: Dict[str, Any] = {"number": 42, "empty": "", "good": "alice"}

    async def verifier(token: str) -> Any:
        if token == "boom":
            raise RuntimeError("the token store is down")
        return answers.get(token)

    async def body() -> None:
        async with await demo_runner().agent().serve_http(token_verifier=verifier) as server:
            for token in ("boom", "number", "empty", "boom"):
                assert await initialize_status(server.url, bearer(token)) == 401, token
            # The server goes on serving.
            async with http_connection(server.url, token="good") as (conn, _):
                session = await conn.new_session()
                assert (await conn.prompt(session, "hello there"))["result"]["stopReason"] == "end_turn"

    with caplog.at_level(logging.ERROR, logger="acp_facade"):
        run(body)
    raised = [r for r in caplog.records if r.exc_info and "the token store is down" in str(r.exc_info[1])]
    assert len(raised) == 2, caplog.text
    assert "42" in caplog.text and "''" in caplog.text, caplog.text


def test_a_foreign_origin_is_refused_with_403() -> None:
    async def body() -> None:
        async with await demo_runner().agent().serve_http(allowed_origins=["https://editor.example"]) as server:
            assert await initialize_status(server.url, {"origin": "https://evil.example"}) == 403
            assert await initialize_status(server.url, {"origin": "https://editor.example"}) == 200
            assert await initialize_status(server.url, {}) == 200

    run(body)


def test_another_principal_s_session_does_not_exist_for_it() -> None:
    async def body() -> None:
        async with await demo_runner().agent().serve_http(token_verifier=verify) as server:
            async with ws_connection(server.url, token="s3cret") as (alice, _):
                async with http_connection(server.url, token="b0b") as (bob, _):
                    session = await alice.new_session()
                    listed = await alice.request("session/list", {})
                    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session]
                    listed = await bob.request("session/list", {})
                    assert listed["result"]["sessions"] == []

                    def load(sid: str) -> Dict[str, Any]:
                        return {"sessionId": sid, "cwd": "/tmp", "mcpServers": []}

                    theirs = await bob.request("session/load", load(session), session)
                    unknown = await bob.request("session/load", load("no-such-session"), "no-such-session")
                    assert "error" in theirs, theirs
                    strip = lambda m, sid: str({k: v for k, v in m.items() if k != "id"}).replace(sid, "SESSION")  # noqa: E731
                    assert strip(theirs, session) == strip(unknown, "no-such-session")
                    # Alice still has it.
                    assert (await alice.prompt(session, "still mine"))["result"]["stopReason"] == "end_turn"

    run(body)


def test_shutdown_with_a_turn_running_refuses_new_connections_and_lets_the_turn_finish() -> None:
    script = Gated()

    async def body() -> None:
        server = await Runner(MemoryStore(), script).agent().serve_http()
        async with http_connection(server.url) as (conn, _):
            assert isinstance(conn, HttpConnection)
            session = await conn.new_session()
            mark = len(conn.seen)
            prompt = asyncio.ensure_future(conn.prompt(session, "gate"))
            await script.started.wait()
            shutdown = asyncio.ensure_future(server.shutdown())
            # New connections are refused once the shutdown has begun; the open one is served.
            while await initialize_status(server.url, {}) != 503:
                await asyncio.sleep(0.01)
            assert not server.is_serving()
            assert not shutdown.done()
            script.gate.set()
            answer = await prompt
            assert answer["result"]["stopReason"] == "end_turn"
            assert said(conn.seen[mark:]) == "finished"
            await shutdown
            assert server.connections == 0
            # Every stream of the connection ended.
            while len(conn.ended) < 2:
                await asyncio.sleep(0.01)
        await server.shutdown()  # again: at once
        await server.wait_closed()
        with pytest.raises(httpx.ConnectError):
            await initialize_status(server.url, {})

    run(body)


def test_serve_forever_cancelled_shuts_the_server_down() -> None:
    async def body() -> None:
        server = await serve_http(demo_runner().options(), "localhost:0")
        assert server.local_address[0] in ("127.0.0.1", "::1")
        forever = asyncio.ensure_future(server.serve_forever())
        await asyncio.sleep(0)
        assert not forever.done()
        forever.cancel()
        with pytest.raises(asyncio.CancelledError):
            await forever
        assert not server.is_serving()
        await server.wait_closed()

    run(body)


def test_bad_addresses_and_settings_raise_and_nothing_is_left_serving() -> None:
    async def body() -> None:
        agent = demo_runner().agent()
        with pytest.raises(ValueError, match="non-loopback"):
            await agent.serve_http("0.0.0.0:0")
        for address in ("no-port", "127.0.0.1:http", "127.0.0.1:70000"):
            with pytest.raises(ValueError, match="HOST:PORT"):
                await agent.serve_http(address)
        with pytest.raises(ValueError, match="path"):
            await agent.serve_http(path="acp")
        with pytest.raises(ValueError, match="idle_timeout"):
            await agent.serve_http(idle_timeout=0)
        with pytest.raises(ValueError, match="shutdown_grace"):
            await agent.serve_http(shutdown_grace=-1)
        with pytest.raises(TypeError):
            await agent.serve_http(token_verifier="s3cret")  # type: ignore[arg-type]
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            with pytest.raises(OSError):
                await agent.serve_http(taken.getsockname())
        # The loop is free of the failed attempts: a server still starts and serves.
        async with await agent.serve_http(path="/v1/acp", max_body_size=64) as server:
            assert server.url.endswith("/v1/acp")
            async with httpx.AsyncClient() as client:
                big = dict(INITIALIZE, params={**initialize_params(), "_meta": {"pad": "x" * 100}})
                assert (await client.post(server.url, json=big)).status_code == 413

    run(body)


def test_the_server_is_usable_as_an_async_context_manager_with_options() -> None:
    async def body() -> RemoteServer:
        options: Options = demo_runner().options()
        async with await serve_http(options, ("127.0.0.1", 0)) as server:
            assert server.is_serving()
            assert repr(server).startswith("RemoteServer(url='http://127.0.0.1:")
        assert not server.is_serving()
        return server

    run(body)


@pytest.fixture
def tls_files(tmp_path: Path) -> Tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, and its key."""
    return self_signed(tmp_path)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tls_serves_https_and_wss_with_the_certificate_given(transport: str, tls_files: Tuple[Path, Path]) -> None:
    cert, key = tls_files

    async def body() -> None:
        # A str and a PathLike are both taken.
        async with await demo_runner().agent().serve_http(tls_cert=str(cert), tls_key=key) as server:
            port = server.local_address[1]
            assert server.url == f"https://127.0.0.1:{port}/acp"
            async with CONNECTIONS[transport](server.url, tls=trusting(cert)) as (conn, answer):
                assert answer["result"]["protocolVersion"] == 1
                session = await conn.new_session()
                mark = len(conn.seen)
                assert (await conn.prompt(session, "stream 2"))["result"]["stopReason"] == "end_turn"
                assert said(conn.seen[mark:]) == "t1 t2 "
            # Plain HTTP is not served on a TLS port, and a client that does not trust the
            # certificate is refused by its own check.
            async with httpx.AsyncClient(timeout=30) as client:
                with pytest.raises(httpx.HTTPError):
                    await client.post(server.url.replace("https://", "http://"), json=INITIALIZE)
                with pytest.raises(httpx.ConnectError):
                    await client.post(server.url, json=INITIALIZE)

    run(body)


def test_unusable_tls_files_raise_naming_the_file(tls_files: Tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls_files
    missing = tmp_path / "no-such-cert.pem"
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a PEM file\n")

    async def body() -> None:
        agent = demo_runner().agent()
        for bad_cert, bad_key, named in ((missing, key, missing), (cert, garbage, garbage), (garbage, key, garbage)):
            with pytest.raises(ValueError) as raised:
                await agent.serve_http(tls_cert=bad_cert, tls_key=bad_key)
            assert str(named) in str(raised.value), raised.value
        # The loop is free of the failed attempts: a TLS server still starts.
        async with await agent.serve_http(tls_cert=cert, tls_key=key) as server:
            async with http_connection(server.url, tls=trusting(cert)) as (_, answer):
                assert answer["result"]["protocolVersion"] == 1

    run(body)


def test_max_connections_answers_one_more_with_503_and_retry_after() -> None:
    async def body() -> None:
        async with await demo_runner().agent().serve_http(max_connections=1) as server:
            async with http_connection(server.url) as (conn, _):
                assert server.connections == 1
                async with httpx.AsyncClient(timeout=30) as client:
                    refused = await client.post(server.url, json=INITIALIZE)
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1"
                ws_url = "ws" + server.url.removeprefix("http")
                with pytest.raises(websockets.exceptions.InvalidStatus) as upgrade:
                    async with websockets.asyncio.client.connect(ws_url):
                        pass
                assert upgrade.value.response.status_code == 503
                # The open connection is still served.
                session = await conn.new_session()
                assert (await conn.prompt(session, "still here"))["result"]["stopReason"] == "end_turn"
                await conn.delete()
            # Its connection gone, the next one is served.
            while await initialize_status(server.url, {}) == 503:
                await asyncio.sleep(0.01)

    run(body)


def test_a_silent_sse_stream_carries_the_keepalive_comment() -> None:
    async def body() -> None:
        async with await demo_runner().agent().serve_http(keepalive_interval=0.05) as server:
            async with httpx.AsyncClient(timeout=30) as client:
                answer = await client.post(server.url, json=INITIALIZE)
                assert answer.status_code == 200
                headers = {"accept": "text/event-stream", "acp-connection-id": answer.headers["acp-connection-id"]}
                async with client.stream("GET", server.url, headers=headers) as stream:
                    assert stream.status_code == 200
                    async for line in stream.aiter_lines():
                        if line.startswith(":"):
                            assert line == ": keepalive"
                            break

    run(body)


def test_bad_limits_and_tls_settings_raise_before_anything_is_bound(tls_files: Tuple[Path, Path]) -> None:
    cert, key = tls_files

    async def body() -> None:
        agent = demo_runner().agent()
        for name in ("max_connections", "max_buffered_bytes"):
            for value in (0, -1):
                with pytest.raises(ValueError, match=f"{name} must be at least 1, got {value}"):
                    await agent.serve_http(**{name: value})  # type: ignore[arg-type]
            with pytest.raises(TypeError, match=name):
                await agent.serve_http(**{name: "8"})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="keepalive_interval must be more than 0 seconds"):
            await agent.serve_http(keepalive_interval=0)
        with pytest.raises(ValueError, match="keepalive_interval must be a non-negative number"):
            await agent.serve_http(keepalive_interval=-1)
        with pytest.raises(ValueError, match="tls_cert is given without tls_key"):
            await agent.serve_http(tls_cert=cert)
        with pytest.raises(ValueError, match="tls_key is given without tls_cert"):
            await agent.serve_http(tls_key=key)
        # Good values serve.
        settings = {"max_connections": 4, "max_buffered_bytes": 1, "keepalive_interval": 30.0}
        async with await agent.serve_http(**settings) as server:  # type: ignore[arg-type]
            async with http_connection(server.url) as (conn, _):
                session = await conn.new_session()
                mark = len(conn.seen)
                # One message larger than the whole buffer is let through when nothing else waits.
                assert (await conn.prompt(session, "stream 3"))["result"]["stopReason"] == "end_turn"
                assert said(conn.seen[mark:]) == "t1 t2 t3 "

    run(body)


def test_a_client_that_stops_reading_is_hung_up_past_max_buffered_bytes() -> None:
    async def body() -> None:
        settings = {"max_buffered_bytes": 4096, "keepalive_interval": 0.2}
        async with await demo_runner().agent().serve_http(**settings) as server:  # type: ignore[arg-type]
            host, port = server.local_address
            async with http_connection(server.url) as (conn, _):
                # session/new without opening the session's stream (new_session would read it) ...
                answer = await conn.request("session/new", {"cwd": "/tmp", "mcpServers": []})
                session = str(answer["result"]["sessionId"])
                # ... which is opened by a client that never reads it (a small receive
                # buffer, so that the kernel holds little of what the agent says).
                raw = socket.socket()
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                raw.setblocking(False)
                try:
                    await asyncio.get_running_loop().sock_connect(raw, (host, port))
                    request = (
                        f"GET /acp HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
                        f"Acp-Connection-Id: {conn.connection_id}\r\nAcp-Session-Id: {session}\r\n\r\n"
                    )
                    await asyncio.get_running_loop().sock_sendall(raw, request.encode())
                    prompt = {
                        "jsonrpc": "2.0",
                        "id": 99,
                        "method": "session/prompt",
                        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "stream 40000"}]},
                    }
                    list_sessions = {"jsonrpc": "2.0", "id": 100, "method": "session/list", "params": {}}
                    headers = {"acp-connection-id": conn.connection_id, "acp-session-id": session}
                    async with httpx.AsyncClient(timeout=30) as client:
                        sent = await client.post(server.url, json=prompt, headers=headers)
                        assert sent.status_code == 202
                        # The connection is hung up: its id is no longer known.
                        while (
                            await client.post(
                                server.url, json=list_sessions, headers={"acp-connection-id": conn.connection_id}
                            )
                        ).status_code != 404:
                            await asyncio.sleep(0.05)
                    assert server.connections == 0
                finally:
                    raw.close()

    run(body)
