"""Rules checked on every transcript, whatever the scenario (DESIGN.md, ARCHITECTURE.md):

- every agent message is valid against the generated v1 schema, and stdout carries JSON-RPC only
  (checked as the lines arrive, see ``wire``);
- every client request gets exactly one response, and no response names an id never asked;
- every ``session/prompt`` answered ``end_turn`` was preceded by a ``usage_update`` of its turn
  (except ``/compact``: it runs no turn of the script, so no step reports usage — docs/DEMO.md's "every
  finished step also reports context usage"; and a repeat of an idempotency key whose first prompt
  was already answered: it runs no turn, the first's was checked);
- a ``session/update`` for a session is only written while a request naming that session is in
  flight: never after a turn's ``session/prompt`` response, never unprompted;
- a ``session/list`` page is sorted by session id bytes, each session once;
- the agent calls the client only for what it advertised in ``initialize`` (``fs.readTextFile``,
  ``fs.writeTextFile``, ``terminal``, ``elicitation.form`` / ``.url``), and for a session it
  knows;
- on EOF the agent exits 0 (see ``Run.finish``).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from .wire import Entry


def _is_request(m: Any) -> bool:
    return (
        isinstance(m, dict)
        and m.get("jsonrpc") == "2.0"
        and isinstance(m.get("method"), str)
        and isinstance(m.get("id"), (str, int))
        and not isinstance(m.get("id"), bool)
    )


def _is_response(m: Any) -> bool:
    return isinstance(m, dict) and "method" not in m and "id" in m and ("result" in m or "error" in m)


def _session_of(m: Dict[str, Any]) -> Optional[str]:
    params = m.get("params")
    if isinstance(params, dict) and isinstance(params.get("sessionId"), str):
        return params["sessionId"]
    return None


def _prompt_text(m: Dict[str, Any]) -> Optional[str]:
    """The first text block of a prompt, trimmed (what the demo script looks at)."""
    params = m.get("params")
    blocks = params.get("prompt") if isinstance(params, dict) else None
    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return block["text"].strip()
    return None


def _idempotency_key(m: Dict[str, Any]) -> Optional[str]:
    """A v1 prompt's idempotency key (``_meta["acp/idempotencyKey"]``), if it has a string one."""
    params = m.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    key = meta.get("acp/idempotencyKey") if isinstance(meta, dict) else None
    return key if isinstance(key, str) else None


def check(entries: List[Entry], killed: Optional[set] = None) -> List[str]:
    """The violations of the transcript-wide rules."""
    killed = killed or set()
    problems: List[str] = []
    procs = sorted({e.proc for e in entries})
    for proc in procs:
        mine = [e for e in entries if e.proc == proc and e.dir != "note"]
        problems += [f"p{proc}: {p}" for p in _check_process(mine, complete=proc not in killed)]
    return problems


_NEEDS = {
    "fs/read_text_file": ("fs", "readTextFile"),
    "fs/write_text_file": ("fs", "writeTextFile"),
    "terminal/create": ("terminal",),
    "terminal/output": ("terminal",),
    "terminal/wait_for_exit": ("terminal",),
    "terminal/kill": ("terminal",),
    "terminal/release": ("terminal",),
    "elicitation/complete": ("elicitation", "url"),
}
"""The client capability each call of the agent needs (``elicitation/create``: by its mode)."""

_GATED_UPDATES = {
    "notice": ("session", "notices"),
    "compaction_update": ("session", "compaction"),
    "compaction_summary_chunk": ("session", "compaction"),
    "subagent_update": ("subagents",),
    "session_message": ("subagents",),
    "session_message_chunk": ("subagents",),
    "plan_update": ("plan",),
    "plan_removed": ("plan",),
}
"""The client capability each ``session/update`` kind of the schema needs (an object marker)."""


def _advertised(capabilities: Any, path: tuple) -> bool:
    """Whether ``clientCapabilities`` advertise ``path`` (a true flag, or a present, non-null
    elicitation mode)."""
    value = capabilities
    for key in path:
        if not isinstance(value, dict):
            return False
        value = value.get(key)
    return value is True or ((path[0] == "elicitation" or path in _GATED_UPDATES.values()) and isinstance(value, dict))


def _unadvertised(m: Dict[str, Any], capabilities: Any) -> Optional[str]:
    """The capability an agent call needs that the client did not advertise, if any."""
    method = m.get("method")
    path = _NEEDS.get(method) if isinstance(method, str) else None
    if method == "session/update":
        kind = ((m.get("params") or {}).get("update") or {}).get("sessionUpdate")
        path = _GATED_UPDATES.get(kind) if isinstance(kind, str) else None
    if method == "elicitation/create":
        mode = (m.get("params") or {}).get("mode")
        path = ("elicitation", mode if isinstance(mode, str) else "?")
    if path is None or _advertised(capabilities, path):
        return None
    return ".".join(path)


def _check_process(entries: List[Entry], complete: bool) -> List[str]:
    problems: List[str] = []
    capabilities: Any = {}
    initialized = False
    asked: Dict[str, int] = {}
    answered: Dict[str, int] = {}
    # In-flight client requests: id -> (method, session id, index of the request).
    in_flight: Dict[str, Any] = {}
    prompt_usage: Dict[str, bool] = {}
    # Idempotency keys of prompts answered with a result, by session: a repeat runs no turn.
    answered_keys: set = set()
    mentioned: set = set()
    # ACP v2 (the agent answered `initialize` with protocolVersion 2): a prompt's response only
    # acknowledges it; its turn lasts until the session's idle `state_update`.
    v2 = False
    for index, e in enumerate(entries):
        m = e.msg
        if e.dir == "in" and isinstance(m, dict) and "method" in m and m.get("id") is not None:
            # Not a valid request, but its id can be echoed in the error that answers it.
            mentioned.add(json.dumps(m["id"]))
        if (
            e.dir == "in"
            and _is_request(m)
            and m["method"] == "initialize"
            and not initialized
            and isinstance((m.get("params") or {}).get("protocolVersion"), int)
        ):
            # The first (well-formed) initialize declares the connection's capabilities; a repeat
            # changes nothing.
            initialized = True
            capabilities = (m.get("params") or {}).get("clientCapabilities") or {}
        if e.dir == "out" and isinstance(m, dict) and "method" in m and not (v2 and m["method"] == "session/update"):
            # (A v2 client needs no capability for any update.)
            missing = _unadvertised(m, capabilities)
            if missing is not None:
                problems.append(f"a call the client did not advertise ({missing}): {e.line[:300]}")
        if e.dir == "in" and _is_request(m):
            key = json.dumps(m["id"])
            asked[key] = asked.get(key, 0) + 1
            if key not in in_flight:
                in_flight[key] = (m["method"], _session_of(m), index)
                idempotency = (_session_of(m), _idempotency_key(m))
                if m["method"] == "session/prompt" and _prompt_text(m) != "/compact" and idempotency not in answered_keys:
                    prompt_usage[key] = False
        elif e.dir == "out" and _is_response(m):
            key = json.dumps(m["id"])
            request = in_flight.get(key)
            if (
                request is not None
                and request[0] == "initialize"
                and isinstance(m.get("result"), dict)
                and m["result"].get("protocolVersion") == 2
            ):
                v2 = True
            if m["id"] is not None:
                answered[key] = answered.get(key, 0) + 1
                if key not in asked and not (key in mentioned and "error" in m):
                    problems.append(f"a response to an id the client never used: {e.line[:300]}")
            request = in_flight.get(key)
            if request is not None and request[0] == "session/list" and isinstance(m.get("result"), dict):
                ids = [s.get("sessionId") for s in m["result"].get("sessions") or [] if isinstance(s, dict)]
                as_bytes = [i.encode() for i in ids if isinstance(i, str)]
                if as_bytes != sorted(set(as_bytes)) or len(as_bytes) != len(ids):
                    problems.append(f"a session/list page not sorted by id bytes (or with a repeat): {ids}")
            turn_goes_on = v2 and request is not None and request[0] == "session/prompt" and "result" in m
            if request is not None and answered[key] >= asked.get(key, 0) and not turn_goes_on:
                in_flight.pop(key)
            if request is not None and request[0] == "session/prompt":
                result = m.get("result")
                keyed = _idempotency_key(entries[request[2]].msg)
                if keyed is not None and isinstance(result, dict):
                    answered_keys.add((request[1], keyed))
                if isinstance(result, dict) and result.get("stopReason") == "end_turn" and prompt_usage.get(key) is False:
                    problems.append(f"a prompt answered end_turn with no usage_update of its turn before: {e.line[:300]}")
        elif e.dir == "out" and isinstance(m, dict) and m.get("method") == "session/update":
            session = _session_of(m)
            naming = [k for k, (_, s, _) in in_flight.items() if s == session]
            if not naming:
                problems.append(f"a session/update with no request for its session in flight: {e.line[:300]}")
            update = (m.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "usage_update":
                for k in naming:
                    if k in prompt_usage:
                        prompt_usage[k] = True
            if v2 and update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
                # The end of the session's turn: its prompt is over.
                for k in [k for k in naming if in_flight[k][0] == "session/prompt" and answered.get(k)]:
                    if update.get("stopReason") == "end_turn" and prompt_usage.get(k) is False:
                        problems.append(f"a v2 turn ended end_turn with no usage_update before: {e.line[:300]}")
                    in_flight.pop(k)
    if complete:
        for key, count in asked.items():
            got = answered.get(key, 0)
            if got != count:
                problems.append(f"request id {key}: {count} request(s), {got} response(s)")
    return problems
