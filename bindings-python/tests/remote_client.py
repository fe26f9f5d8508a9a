"""A small ACP client over the remote transports, for the tests of ``Agent.serve_http`` and of the
demo's ``--listen``: Streamable HTTP (httpx: an ``initialize`` POST answered in its body, every
other message POSTed and answered ``202``, what the agent says read from the connection's and the
sessions' SSE streams) and WebSocket (websockets: one JSON-RPC message per text frame).

Both give one queue of what the agent sent, whatever stream it came on, and answer the agent's
requests (``session/request_permission``, ``fs/read_text_file``) with the handlers given.

Over TLS (an ``https://`` URL) the helpers take an ``ssl.SSLContext`` that trusts the server's
certificate; :func:`self_signed` makes one with the ``openssl`` command line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import subprocess
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Tuple

import httpx
import websockets.asyncio.client

Handler = Callable[[Dict[str, Any]], Awaitable[Any]]
"""Answers one request of the agent: its params in, its result out."""


def initialize_params(fs: bool = False) -> Dict[str, Any]:
    caps: Dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": False}} if fs else {}
    return {"protocolVersion": 1, "clientCapabilities": caps}


def said(messages: List[Dict[str, Any]]) -> str:
    """The text of the ``agent_message_chunk`` updates among ``messages``."""
    return "".join(
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )


class Connection:
    """One ACP connection: requests out, everything the agent sends in."""

    def __init__(self, handlers: Optional[Dict[str, Handler]] = None) -> None:
        self.inbox: asyncio.Queue[Dict[str, Any]] = asyncio.Queue()
        self.handlers = handlers or {}
        self.next_id = 0
        self.seen: List[Dict[str, Any]] = []
        self._tasks: List[asyncio.Task[Any]] = []

    async def send(self, message: Dict[str, Any], session: Optional[str] = None) -> None:
        raise NotImplementedError

    async def opened_session(self, session: str) -> None:
        """Called once a session is known (HTTP opens its stream)."""

    def start(self, coro: Awaitable[Any]) -> None:
        self._tasks.append(asyncio.ensure_future(coro))

    async def request(self, method: str, params: Dict[str, Any], session: Optional[str] = None) -> Dict[str, Any]:
        """Sends a request and returns its answer (the whole message), answering the agent's
        requests meanwhile; every other message is kept in ``seen``."""
        self.next_id += 1
        mine = self.next_id
        await self.send({"jsonrpc": "2.0", "id": mine, "method": method, "params": params}, session)
        while True:
            message = await asyncio.wait_for(self.inbox.get(), 30)
            if "method" not in message and message.get("id") == mine:
                return message
            if "method" in message and "id" in message:
                handler = self.handlers.get(message["method"])
                assert handler is not None, f"no handler for the agent's {message['method']}"
                result = await handler(message["params"])
                # The answer to a request about a session names it, as the SDK's client does.
                about = message["params"].get("sessionId")
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result}, about)
            else:
                self.seen.append(message)

    async def notify(self, method: str, params: Dict[str, Any], session: Optional[str] = None) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params}, session)

    async def new_session(self) -> str:
        answer = await self.request("session/new", {"cwd": "/tmp", "mcpServers": []})
        session = str(answer["result"]["sessionId"])
        await self.opened_session(session)
        return session

    async def prompt(self, session: str, text: str) -> Dict[str, Any]:
        return await self.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}, session
        )

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task


class HttpConnection(Connection):
    """Streamable HTTP."""

    def __init__(self, client: httpx.AsyncClient, url: str, headers: Dict[str, str], handlers: Optional[Dict[str, Handler]]) -> None:
        super().__init__(handlers)
        self.client = client
        self.url = url
        self.headers = headers
        self.connection_id = ""
        self.ended: List[str] = []
        """The streams that ended (``""``: the connection's), in order."""

    async def initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        response = await self.client.post(self.url, json=message, headers=self.headers)
        assert response.status_code == 200, (response.status_code, response.text)
        self.connection_id = response.headers["acp-connection-id"]
        await self._open_stream(None)
        return dict(response.json())

    async def _open_stream(self, session: Optional[str]) -> None:
        headers = {**self.headers, "accept": "text/event-stream", "acp-connection-id": self.connection_id}
        if session is not None:
            headers["acp-session-id"] = session
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def read() -> None:
            async with self.client.stream("GET", self.url, headers=headers, timeout=None) as response:
                assert response.status_code == 200, response.status_code
                opened.set_result(None)
                data: List[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].lstrip())
                    elif line == "" and data:
                        await self.inbox.put(json.loads("".join(data)))
                        data = []
            self.ended.append(session or "")

        self.start(read())
        await asyncio.wait_for(opened, 30)

    async def opened_session(self, session: str) -> None:
        await self._open_stream(session)

    async def send(self, message: Dict[str, Any], session: Optional[str] = None) -> None:
        headers = {**self.headers, "acp-connection-id": self.connection_id}
        if session is not None:
            headers["acp-session-id"] = session
        response = await self.client.post(self.url, json=message, headers=headers)
        assert response.status_code == 202, (response.status_code, response.text)

    async def delete(self) -> None:
        response = await self.client.delete(self.url, headers={**self.headers, "acp-connection-id": self.connection_id})
        assert response.status_code == 202, response.status_code


class WebSocketConnection(Connection):
    """WebSocket."""

    def __init__(self, socket: websockets.asyncio.client.ClientConnection, handlers: Optional[Dict[str, Handler]]) -> None:
        super().__init__(handlers)
        self.socket = socket

        async def read() -> None:
            async for frame in socket:
                await self.inbox.put(json.loads(frame))

        self.start(read())

    async def initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return await self.request("initialize", params)

    async def send(self, message: Dict[str, Any], session: Optional[str] = None) -> None:
        await self.socket.send(json.dumps(message))


def self_signed(directory: Path) -> Tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` and ``127.0.0.1`` and its key (PEM files in
    ``directory``), made by the ``openssl`` command line (a missing ``openssl`` fails the test)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


def trusting(cert: Path) -> ssl.SSLContext:
    """A client context that trusts ``cert`` (and nothing else)."""
    return ssl.create_default_context(cafile=str(cert))


def bearer(token: Optional[str]) -> Dict[str, str]:
    return {} if token is None else {"authorization": f"Bearer {token}"}


@contextlib.asynccontextmanager
async def http_connection(
    url: str,
    token: Optional[str] = None,
    handlers: Optional[Dict[str, Handler]] = None,
    fs: bool = False,
    tls: Optional[ssl.SSLContext] = None,
) -> AsyncIterator[Tuple[HttpConnection, Dict[str, Any]]]:
    """An initialized Streamable HTTP connection, and the answer to its ``initialize``."""
    async with httpx.AsyncClient(timeout=30, verify=tls if tls is not None else True) as client:
        conn = HttpConnection(client, url, bearer(token), handlers)
        try:
            answer = await conn.initialize(initialize_params(fs))
            yield conn, answer
        finally:
            await conn.close()


@contextlib.asynccontextmanager
async def ws_connection(
    url: str,
    token: Optional[str] = None,
    handlers: Optional[Dict[str, Handler]] = None,
    fs: bool = False,
    tls: Optional[ssl.SSLContext] = None,
) -> AsyncIterator[Tuple[WebSocketConnection, Dict[str, Any]]]:
    """An initialized WebSocket connection (``wss://`` for an ``https://`` URL), and the answer
    to its ``initialize``."""
    ws_url = "ws" + url.removeprefix("http")
    async with websockets.asyncio.client.connect(ws_url, additional_headers=bearer(token), ssl=tls) as socket:
        conn = WebSocketConnection(socket, handlers)
        try:
            answer = await conn.initialize(initialize_params(fs))
            yield conn, answer
        finally:
            await conn.close()


CONNECTIONS = {"http": http_connection, "websocket": ws_connection}
"""Both transports, by name (for ``pytest.mark.parametrize``)."""
