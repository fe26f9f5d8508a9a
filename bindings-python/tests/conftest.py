"""Shared helpers: the Python demo agent driven by the official ACP Python client, with every
message the agent sends validated against the ACP v1 schema generated from the agent's wire types
(schema/v1/schema.json; schema/README.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Tuple

import jsonschema
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "python" / "demo_host.py"
SCHEMA = json.loads((ROOT / "schema" / "v1" / "schema.json").read_text())
"""The ACP v1 schema generated from the agent's wire types (schema/README.md)."""
SCHEMA_V2 = json.loads((ROOT / "schema" / "v2" / "schema.json").read_text())
"""The ACP v2 schema (a preview: nothing speaks it yet)."""


def _refs(schema: Any) -> List[str]:
    """The names of every ``#/$defs/...`` reference under ``schema``."""
    if isinstance(schema, dict):
        if isinstance(schema.get("$ref"), str):
            return [schema["$ref"].removeprefix("#/$defs/")]
        return [name for value in schema.values() for name in _refs(value)]
    if isinstance(schema, list):
        return [name for item in schema for name in _refs(item)]
    return []


class Protocol:
    """One protocol version's schema, and what it says an agent may send: the definitions the
    envelopes ``$defs/AgentRequest``, ``AgentNotification``, ``ProtocolLevelNotification`` and
    ``AgentResponse`` may carry each name their method (``x-method``), as in
    runner/tests/common/schema.rs."""

    def __init__(self, name: str, schema: Dict[str, Any]) -> None:
        self.name = name
        self.defs: Dict[str, Any] = schema["$defs"]
        self.requests = self._methods("AgentRequest")
        self.notifications = self._methods("AgentNotification", "ProtocolLevelNotification")
        self.responses = self._methods("AgentResponse")
        self._validators: Dict[str, Any] = {}

    def _methods(self, *envelopes: str) -> Dict[str, str]:
        table = {
            self.defs[name]["x-method"]: name
            for envelope in envelopes
            for name in _refs(self.defs[envelope])
            if "x-method" in self.defs[name]
        }
        assert table, f"{self.name}: no method in {envelopes}"
        return table

    def validate_def(self, name: str, instance: Any) -> None:
        """Validates ``instance`` against ``$defs/name``."""
        validator = self._validators.get(name)
        if validator is None:
            assert name in self.defs, f"{self.name}: no schema definition {name}"
            doc = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": self.defs, "$ref": f"#/$defs/{name}"}
            validator = jsonschema.Draft202012Validator(doc)
            self._validators[name] = validator
        errors = [f"{e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(instance)]
        assert not errors, f"schema violation ({self.name} {name}) in {instance}: {errors}"


V1 = Protocol("ACP v1", SCHEMA)
V2 = Protocol("ACP v2", SCHEMA_V2)


def validate_def(name: str, instance: Any) -> None:
    """Validates ``instance`` against ``$defs/name`` of the v1 schema."""
    V1.validate_def(name, instance)


def validate_def_v2(name: str, instance: Any) -> None:
    """Validates ``instance`` against ``$defs/name`` of the v2 schema."""
    V2.validate_def(name, instance)


class SchemaObserver:
    """Checks every message the agent sends against ``protocol``'s schema (v1 unless told):
    envelope, responses by the method asked, requests and notifications by their method."""

    def __init__(self, protocol: Protocol = V1) -> None:
        self.protocol = protocol
        self.sent: Dict[Any, str] = {}
        self.checked = 0
        self.violations: List[str] = []

    def __call__(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction is StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                self.sent[message["id"]] = message["method"]
            return
        try:
            self._check(message)
        except AssertionError as e:  # recorded, then asserted by the test
            self.violations.append(str(e))

    def _check(self, message: Dict[str, Any]) -> None:
        self.checked += 1
        assert message.get("jsonrpc") == "2.0", message
        protocol = self.protocol
        method = message.get("method")
        if method is not None:
            table = protocol.requests if "id" in message else protocol.notifications
            assert method in table, f"unexpected agent message {method}"
            protocol.validate_def(table[method], message.get("params"))
            return
        if "error" in message:
            protocol.validate_def("Error", message["error"])
            return
        asked = self.sent.get(message.get("id"))
        assert asked is not None, f"a response to an unknown id: {message}"
        if asked in protocol.responses:
            protocol.validate_def(protocol.responses[asked], message["result"])


class RecordingClient:
    """An ACP client that records session updates and answers permission requests by policy."""

    def __init__(self) -> None:
        self.updates: List[Tuple[str, Any]] = []
        self.permission_requests: List[Any] = []
        self.permission_answer: Optional[str] = "allow_once"  # an option id, or None to cancel
        self.permission_wait: Optional[asyncio.Event] = None

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.permission_requests.append((options, tool_call))
        if self.permission_wait is not None:
            await self.permission_wait.wait()
        if self.permission_answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.permission_answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self, session_id: Optional[str] = None) -> List[str]:
        return [u.session_update for s, u in self.updates if session_id is None or s == session_id]

    def chunks(self, kind: str = "agent_message_chunk", session_id: Optional[str] = None) -> List[str]:
        return [
            u.content.text
            for s, u in self.updates
            if u.session_update == kind and (session_id is None or s == session_id)
        ]

    def clear(self) -> None:
        self.updates.clear()


class Demo:
    """A running demo agent and the official client connected to it."""

    def __init__(self, conn: ClientSideConnection, process: Any, client: RecordingClient, observer: SchemaObserver):
        self.conn = conn
        self.process = process
        self.client = client
        self.observer = observer

    async def new_session(self, cwd: str = "/tmp") -> str:
        response = await self.conn.new_session(cwd=cwd, mcp_servers=[])
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> Any:
        return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    async def request(self, method: str, params: Dict[str, Any]) -> Any:
        """A raw request through the client's connection (for methods the client has no helper for)."""
        return await self.conn._conn.send_request(method, params)

    def assert_schema_clean(self) -> None:
        assert not self.observer.violations, self.observer.violations
        assert self.observer.checked > 0


@contextlib.asynccontextmanager
async def demo(*args: str, client: Optional[RecordingClient] = None, script: Path = DEMO) -> AsyncIterator[Demo]:
    """Spawns the Python demo agent (``args`` are its command line) and initializes it."""
    client = client or RecordingClient()
    observer = SchemaObserver()
    async with spawn_agent_process(
        client, sys.executable, str(script), *args, observers=[observer], transport_kwargs={"limit": 16 * 1024 * 1024}
    ) as (conn, process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        harness = Demo(conn, process, client, observer)
        yield harness
        harness.assert_schema_clean()


@contextlib.asynccontextmanager
async def connect(
    agent: Any, client: Optional[RecordingClient] = None, validate: bool = True, capabilities: Any = None
) -> AsyncIterator[ClientSideConnection]:
    """Serves ``agent`` (an :class:`acp_facade.Agent`) over a socket pair in this loop and connects
    the official client to it, advertising ``capabilities`` (ACP ``ClientCapabilities``); with
    ``validate``, every message the agent sends is checked against the schema (off for floods of
    thousands of identical chunks, where it is most of the time)."""
    ours, theirs = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=ours)
    client_reader, client_writer = await asyncio.open_connection(sock=theirs)
    serving = asyncio.ensure_future(agent.serve(agent_reader, agent_writer))
    observer = SchemaObserver()
    observers = [observer] if validate else []
    conn = ClientSideConnection(client or RecordingClient(), client_writer, client_reader, observers=observers)
    try:
        conn.init_response = await conn.initialize(  # type: ignore[attr-defined]
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities
        )
        yield conn
    finally:
        await conn.close()
        client_writer.close()
        await asyncio.wait_for(serving, 15)
    assert not observer.violations, observer.violations


def run(coro_fn: Callable[[], Any]) -> Any:
    """Runs an async test body."""
    return asyncio.run(coro_fn())


_SCHEMAS = 0


def postgres_url() -> str:
    """A URL for a new, empty schema on the test PostgreSQL server (scripts/test starts one and sets
    ``ACP_FACADE_TEST_POSTGRES_URL``; see scripts/lib/postgres.sh). Without one the calling test is
    skipped, saying so — or fails, when ``ACP_FACADE_TEST_POSTGRES_REQUIRED=1`` (scripts/test)."""
    import os
    import subprocess
    import time

    import pytest

    global _SCHEMAS
    base = os.environ.get("ACP_FACADE_TEST_POSTGRES_URL")
    if not base:
        if os.environ.get("ACP_FACADE_TEST_POSTGRES_REQUIRED") == "1":
            pytest.fail("ACP_FACADE_TEST_POSTGRES_REQUIRED=1 but ACP_FACADE_TEST_POSTGRES_URL is not set")
        pytest.skip("ACP_FACADE_TEST_POSTGRES_URL is not set: the PostgreSQL store is NOT tested")
    _SCHEMAS += 1
    schema = f"acp_test_{int(time.time())}_{os.getpid()}_{_SCHEMAS}"
    subprocess.run(["psql", base, "-q", "-c", f"CREATE SCHEMA {schema}"], check=True)
    return f"{base}{'&' if '?' in base else '?'}options=-c%20search_path%3D{schema}"
