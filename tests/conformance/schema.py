"""Validation of every agent message against the ACP schemas generated from the agent's wire types
(``schema/v1/schema.json``; ``schema/v2/schema.json`` for protocol version 2; draft 2020-12;
schema/README.md).

The mapping is the core's (runner/tests/common/schema.rs): requests and notifications by method,
responses by the method of the request they answer, errors against ``$defs/Error``. Which
definition a method's params or result are is read from the schema: the definitions the envelopes
``$defs/AgentRequest``, ``AgentNotification``, ``ProtocolLevelNotification`` (what an agent sends)
and ``AgentResponse`` (its results) may carry each name their method (``x-method``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import jsonschema

from .agents import SCHEMA_PATH, SCHEMA_V2_PATH


def _refs(schema: Any) -> Iterator[str]:
    """The names of every ``#/$defs/...`` reference under ``schema``."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                yield value.removeprefix("#/$defs/")
            else:
                yield from _refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _refs(item)


class Protocol:
    """One protocol version's schema, and what it says an agent may send."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.defs: Dict[str, Any] = json.loads(path.read_text())["$defs"]
        self.agent_requests = self._methods("AgentRequest")
        """The requests an agent sends: method → the definition of their params."""
        self.agent_notifications = self._methods("AgentNotification", "ProtocolLevelNotification")
        """The notifications an agent sends: method → the definition of their params."""
        self.responses = self._methods("AgentResponse")
        """The results an agent sends: the method of the request answered → their definition."""
        self._validators: Dict[str, jsonschema.Draft202012Validator] = {}

    def _methods(self, *envelopes: str) -> Dict[str, str]:
        table: Dict[str, str] = {}
        for envelope in envelopes:
            for name in _refs(self.defs[envelope]):
                method = self.defs[name].get("x-method")
                if method is None:
                    continue
                assert table.setdefault(method, name) == name, f"{self.name}: two definitions for {method}"
        assert table, f"{self.name}: no method in {envelopes}"
        return table

    def violations_of(self, definition: str, instance: Any) -> List[str]:
        """Every violation of ``$defs/definition`` by ``instance`` (empty when valid)."""
        validator = self._validators.get(definition)
        if validator is None:
            if definition not in self.defs:
                raise KeyError(f"{self.name}: no schema definition {definition}")
            doc = {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": self.defs,
                "$ref": f"#/$defs/{definition}",
            }
            jsonschema.Draft202012Validator.check_schema(doc)
            validator = jsonschema.Draft202012Validator(doc)
            self._validators[definition] = validator
        return [f"{definition}: {e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(instance)]

    def check_agent_message(self, message: Any, asked: Dict[str, List[str]]) -> List[str]:
        """See :func:`check_agent_message`."""
        if not isinstance(message, dict):
            return [f"not a JSON-RPC object: {message!r}"]
        problems: List[str] = []
        if message.get("jsonrpc") != "2.0":
            problems.append("the envelope lacks jsonrpc 2.0")
        method = message.get("method")
        if method is not None:
            if "id" in message:
                definition: Optional[str] = self.agent_requests.get(method)
                if definition is None:
                    return problems + [f"an unexpected request from the agent: {method}"]
            else:
                definition = self.agent_notifications.get(method)
                if definition is None:
                    return problems + [f"an unexpected notification from the agent: {method}"]
            return problems + self.violations_of(definition, message.get("params"))
        if "id" not in message:
            return problems + ["neither a request, a notification nor a response"]
        if ("result" in message) == ("error" in message):
            return problems + ["a response needs exactly one of result and error"]
        waiting = asked.get(id_key(message["id"])) or []
        if "error" in message:
            if waiting:
                waiting.pop()
            return problems + self.violations_of("Error", message["error"])
        if not waiting:
            return problems + [f"a result for an id the client never used: {message['id']!r}"]
        method = waiting.pop(0)
        definition = self.responses.get(method)
        return problems + (self.violations_of(definition, message["result"]) if definition else [])


V1 = Protocol("ACP v1", SCHEMA_PATH)
"""The schema every agent message is checked against."""
V2 = Protocol("ACP v2", SCHEMA_V2_PATH)
"""Protocol version 2 (a preview: nothing speaks it yet)."""


def id_key(request_id: Any) -> str:
    """A JSON-RPC id as a dictionary key (1 and "1" stay distinct)."""
    return json.dumps(request_id)


def violations_of(definition: str, instance: Any) -> List[str]:
    """Every violation of the v1 schema's ``$defs/definition`` by ``instance`` (empty when valid)."""
    return V1.violations_of(definition, instance)


def check_agent_message(message: Any, asked: Dict[str, List[str]]) -> List[str]:
    """The violations of one message the agent wrote, against the v1 schema. ``asked`` maps the
    ids of the client's unanswered requests (``id_key``) to their methods, oldest first; a
    response consumes one: a result the oldest (a reused id's duplicate is answered with an error
    at once, the original keeps running), an error the newest."""
    return V1.check_agent_message(message, asked)


def check_agent_message_v2(message: Any, asked: Dict[str, List[str]]) -> List[str]:
    """:func:`check_agent_message` against the v2 schema."""
    return V2.check_agent_message(message, asked)

