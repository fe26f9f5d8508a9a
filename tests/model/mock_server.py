"""A scripted OpenAI-compatible Chat Completions server, for the model-backed example agents.

``MockModel`` listens on 127.0.0.1 (a port of its own) and answers each ``POST
.../chat/completions`` with the next script of its queue (``queue``):

- ``reply(*chunks)``: a streamed answer, one SSE ``data:`` line per chunk (text, reasoning or a
  tool call, whose arguments arrive in fragments as a real server sends them), a final chunk
  with ``finish_reason``, then ``data: [DONE]``;
- ``slow(*chunks)``: the chunks, then nothing more until the client goes away (a stream waiting
  to be cancelled; it gives up after ``SLOW_LIMIT`` seconds);
- ``http_error(status, message)``: a non-2xx answer with OpenAI's error JSON;
- ``malformed()``: a stream whose ``data:`` line is not JSON;
- ``failing(*chunks)``: the chunks, then an ``error`` object in a ``data:`` line;
- ``cut(*chunks)``: the chunks, then the connection closed in the middle of the body.

Every request is recorded (``requests``: its path, headers and JSON body) with whether the
client disconnected in the middle of a slow stream (``Request.disconnected``, an event). A request
with nothing queued is answered 500 with an error naming the problem, so a test that queued too
few scripts fails readably.

Stdlib only: ``http.server`` on threads, chunked transfer encoding as OpenAI's API sends it.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Deque, Dict, List, Optional

SLOW_LIMIT = 30.0
"""How long a slow stream waits for its client to go away before it ends on its own."""


@dataclass
class Script:
    """One answer: ``kind`` is ``stream``, ``slow``, ``failing``, ``cut``, ``error`` or ``malformed``."""

    kind: str
    chunks: List[Dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error: Optional[Dict[str, Any]] = None


def text(content: str) -> Dict[str, Any]:
    """A chunk of answer text (``delta.content``)."""
    return {"content": content}


def reasoning(content: str) -> Dict[str, Any]:
    """A chunk of reasoning (``delta.reasoning_content``, as vLLM, llama.cpp and DeepSeek send)."""
    return {"reasoning_content": content}


def tool_call(name: str, arguments: Dict[str, Any], call_id: str = "call_1", index: int = 0) -> Dict[str, Any]:
    """A tool call; its arguments are streamed in three fragments."""
    return {"tool_call": {"index": index, "id": call_id, "name": name, "arguments": json.dumps(arguments)}}


def reply(*chunks: Dict[str, Any]) -> Script:
    """A streamed answer made of ``chunks`` (see :func:`text`, :func:`reasoning`, :func:`tool_call`)."""
    return Script("stream", list(chunks))


def slow(*chunks: Dict[str, Any]) -> Script:
    """``chunks``, then a stream that never ends until the client disconnects."""
    return Script("slow", list(chunks))


def http_error(status: int, message: str, error_type: str = "invalid_request_error") -> Script:
    """A non-2xx answer with OpenAI's error body."""
    return Script("error", status=status, error={"error": {"message": message, "type": error_type, "code": None}})


def malformed() -> Script:
    """A 200 stream whose first ``data:`` line is not JSON."""
    return Script("malformed")


def cut(*chunks: Dict[str, Any]) -> Script:
    """``chunks``, then the connection closed in the middle of the body (a server that died)."""
    return Script("cut", list(chunks))


def failing(*chunks: Dict[str, Any], message: str = "The server had an error while processing your request.") -> Script:
    """``chunks``, then an ``error`` object in a ``data:`` line (a failure after the stream started,
    as OpenAI and vLLM report one), then ``[DONE]``."""
    return Script("failing", list(chunks), error={"error": {"message": message, "type": "server_error"}})


@dataclass
class Request:
    """One request the server received."""

    path: str
    headers: Dict[str, str]
    body: Any
    disconnected: threading.Event = field(default_factory=threading.Event)
    """Set when the client went away in the middle of a slow stream."""

    @property
    def messages(self) -> List[Dict[str, Any]]:
        return list(self.body.get("messages") or [])


def _frames(chunks: List[Dict[str, Any]], model: str) -> List[bytes]:
    """The SSE ``data:`` lines of ``chunks``, each a ``chat.completion.chunk``."""

    def frame(delta: Dict[str, Any], finish: Optional[str] = None) -> bytes:
        chunk = {
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    frames = [frame({"role": "assistant", "content": ""})]
    calls = False
    for chunk in chunks:
        call = chunk.get("tool_call")
        if call is None:
            frames.append(frame(chunk))
            continue
        calls = True
        head = {"index": call["index"], "id": call["id"], "type": "function"}
        frames.append(frame({"tool_calls": [{**head, "function": {"name": call["name"], "arguments": ""}}]}))
        arguments = call["arguments"]
        third = max(len(arguments) // 3, 1)
        for start in range(0, len(arguments), third):
            fragment = arguments[start : start + third]
            frames.append(frame({"tool_calls": [{"index": call["index"], "function": {"arguments": fragment}}]}))
    frames.append(frame({}, "tool_calls" if calls else "stop"))
    return frames


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        model = self.server.mock
        with model.lock:
            model.requests.append(request)
            script = model.queue.popleft() if model.queue else None
            model.arrived.notify_all()
        if not self.path.endswith("/chat/completions"):
            script = Script("error", status=404, error={"error": {"message": f"no route {self.path}"}})
        elif script is None:
            script = Script("error", status=500, error={"error": {"message": "mock model: no script queued"}})
        if script.kind == "error":
            payload = json.dumps(script.error).encode()
            self.send_response(script.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        name = str(body.get("model", "mock")) if isinstance(body, dict) else "mock"
        try:
            if script.kind == "malformed":
                self._chunk(b"data: {this is not json\n\n")
            else:
                frames = _frames(script.chunks, name)
                if script.kind == "failing":
                    frames = frames[:-1] + [b"data: " + json.dumps(script.error).encode() + b"\n\n"]
                if script.kind in ("slow", "cut"):
                    frames = frames[:-1]  # no finish: the stream goes on
                for data in frames:
                    self._chunk(data)
                if script.kind == "slow":
                    self._wait_for_disconnect(request)
                    return
                if script.kind == "cut":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            request.disconnected.set()
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _wait_for_disconnect(self, request: Request) -> None:
        """Keeps the stream open (an SSE comment now and then) until the client closes it."""
        self.close_connection = True
        deadline = time.monotonic() + SLOW_LIMIT
        sock: socket.socket = self.connection
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0.05)
            if readable:
                try:
                    if sock.recv(1, socket.MSG_PEEK) == b"":
                        request.disconnected.set()
                        return
                except OSError:
                    request.disconnected.set()
                    return
            try:
                self._chunk(b": still thinking\n\n")
            except OSError:
                request.disconnected.set()
                return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    mock: "MockModel"


class MockModel:
    """See the module doc. Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(self) -> None:
        self.queue: Deque[Script] = deque()
        self.requests: List[Request] = []
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.mock = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="mock-model", daemon=True)

    @property
    def base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` is set to."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *scripts: Script) -> None:
        """Queues ``scripts``: each answers one request, in order."""
        with self.lock:
            self.queue.extend(scripts)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> List[Request]:
        """Waits until ``count`` requests arrived; returns them all."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"the mock model got {len(self.requests)} requests, expected {count}")
            return list(self.requests)

    def start(self) -> "MockModel":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "MockModel":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
