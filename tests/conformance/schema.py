"""Validation of every agent message against the pinned ACP schema (v1.21.0, draft 2020-12).

The mapping is the core's (runner/tests/common/schema.rs): requests and notifications by method,
responses by the method of the request they answer, errors against ``$defs/Error``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import jsonschema

from .agents import SCHEMA_PATH

_SCHEMA = json.loads(SCHEMA_PATH.read_text())

RESPONSE_DEFS = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "logout": "LogoutResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/resume": "ResumeSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/delete": "DeleteSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
}
AGENT_REQUEST_DEFS = {
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest",
    "elicitation/create": "CreateElicitationRequest",
}
AGENT_NOTIFICATION_DEFS = {
    "session/update": "SessionNotification",
    "$/cancel_request": "CancelRequestNotification",
    "elicitation/complete": "CompleteElicitationNotification",
}

_VALIDATORS: Dict[str, jsonschema.Draft202012Validator] = {}


def violations_of(definition: str, instance: Any) -> List[str]:
    """Every violation of ``$defs/definition`` by ``instance`` (empty when valid)."""
    validator = _VALIDATORS.get(definition)
    if validator is None:
        doc = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": _SCHEMA["$defs"],
            "$ref": f"#/$defs/{definition}",
        }
        jsonschema.Draft202012Validator.check_schema(doc)
        validator = jsonschema.Draft202012Validator(doc)
        _VALIDATORS[definition] = validator
    return [f"{definition}: {e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(instance)]


def id_key(request_id: Any) -> str:
    """A JSON-RPC id as a dictionary key (1 and "1" stay distinct)."""
    return json.dumps(request_id)


def check_agent_message(message: Any, asked: Dict[str, List[str]]) -> List[str]:
    """The violations of one message the agent wrote. ``asked`` maps the ids of the client's
    unanswered requests (``id_key``) to their methods, oldest first; a response consumes one: a
    result the oldest (a reused id's duplicate is answered with an error at once, the original
    keeps running), an error the newest."""
    if not isinstance(message, dict):
        return [f"not a JSON-RPC object: {message!r}"]
    problems: List[str] = []
    if message.get("jsonrpc") != "2.0":
        problems.append("the envelope lacks jsonrpc 2.0")
    method = message.get("method")
    if method is not None:
        if "id" in message:
            definition: Optional[str] = AGENT_REQUEST_DEFS.get(method)
            if definition is None:
                return problems + [f"an unexpected request from the agent: {method}"]
        else:
            definition = AGENT_NOTIFICATION_DEFS.get(method)
            if definition is None:
                return problems + [f"an unexpected notification from the agent: {method}"]
        return problems + violations_of(definition, message.get("params"))
    if "id" not in message:
        return problems + ["neither a request, a notification nor a response"]
    if ("result" in message) == ("error" in message):
        return problems + ["a response needs exactly one of result and error"]
    waiting = asked.get(id_key(message["id"])) or []
    if "error" in message:
        if waiting:
            waiting.pop()
        return problems + violations_of("Error", message["error"])
    if not waiting:
        return problems + [f"a result for an id the client never used: {message['id']!r}"]
    method = waiting.pop(0)
    definition = RESPONSE_DEFS.get(method)
    return problems + (violations_of(definition, message["result"]) if definition else [])
