"""Normalised transcripts and their comparison.

What legitimately differs between two runs of the same scenario is replaced by placeholders
numbered in order of first appearance, so that equal behaviour gives equal text:

- values the agent generates: session ids, tool call ids and message ids (``sessionId`` /
  ``toolCallId`` / ``messageId`` first written by the agent; a v2 prompt's user message id names
  its process) and the ids of the agent's own requests (and the client's answers to them);
- list cursors (``cursor`` / ``nextCursor``: HMAC-authenticated with a per-process random key,
  including cursors the client derived from them);
- times: ``updatedAt`` and any RFC 3339 timestamp inside a string;
- stream cursors: a ``session/update``'s ``params._meta["acp/cursor"]``, which only the remote
  transports carry (left out, with a ``_meta`` it leaves empty; ``tests/test_resume.py`` checks
  them).

Those values are also replaced wherever they appear inside other strings (an error message naming a
session). Values the client invented (a malformed or unknown session id) are the same for every
agent and stay as they are.

``session/list`` orders sessions by id bytes, and the ids are random: the entries of a list result
are put in a canonical order (the sorted order itself is checked on the raw transcript, see
``invariants``). A scenario whose pages depend on the ids (which random ids fall on which page) is
normalised with ``erase_ids``: every session id becomes ``<session>``.

Everything else — every key, string, number and the order of the messages — must be equal.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Dict, Iterable, List

from .wire import Entry

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")
_GENERATED_KEYS = {"sessionId": "session", "toolCallId": "tool-call", "messageId": "message"}
_CURSOR_KEYS = {"cursor", "nextCursor"}
_MIN_SUBSTITUTED = 6


class _Names:
    def __init__(self) -> None:
        self.by_value: Dict[str, str] = {}
        self.counts: Dict[str, int] = {}

    def name(self, kind: str, value: str) -> str:
        found = self.by_value.get(value)
        if found is None:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            found = f"<{kind}-{self.counts[kind]}>"
            self.by_value[value] = found
        return found


def _walk(value: Any, visit: Any, key: str = "") -> None:
    visit(key, value)
    if isinstance(value, dict):
        for k, v in value.items():
            _walk(v, visit, k)
    elif isinstance(value, list):
        for v in value:
            _walk(v, visit, key)


def _collect(entries: List[Entry]) -> _Names:
    names = _Names()
    agent_request_ids: Dict[str, str] = {}
    for e in entries:
        if not e.is_json or e.dir == "note":
            continue
        msg = e.msg

        def visit(key: str, value: Any) -> None:
            if not isinstance(value, str):
                return
            if key in _CURSOR_KEYS:
                names.name("cursor", value)
            elif key in _GENERATED_KEYS and (e.dir == "out" or value in names.by_value):
                names.name(_GENERATED_KEYS[key], value)

        _walk(msg, visit)
        if e.dir == "out" and isinstance(msg, dict) and "method" in msg and "id" in msg:
            agent_request_ids[json.dumps(msg["id"])] = names.name("agent-request", json.dumps(msg["id"]))
    names.agent_request_ids = agent_request_ids  # type: ignore[attr-defined]
    return names


def _rewrite(value: Any, names: _Names, patterns: List[str], key: str = "") -> Any:
    if isinstance(value, dict):
        out = {k: _rewrite(v, names, patterns, k) for k, v in value.items()}
        sessions = out.get("sessions")
        if isinstance(sessions, list) and all(isinstance(s, dict) and "sessionId" in s for s in sessions):
            out["sessions"] = sorted(sessions, key=lambda s: json.dumps(s, sort_keys=True))
        return out
    if isinstance(value, list):
        return [_rewrite(v, names, patterns, key) for v in value]
    if isinstance(value, str):
        if value in names.by_value and (key in _CURSOR_KEYS or key in _GENERATED_KEYS):
            return names.by_value[value]
        if key == "updatedAt":
            return "<time>"
        text = _TIME.sub("<time>", value)
        for known in patterns:
            if known in text:
                text = text.replace(known, names.by_value[known])
        return text
    return value


def _without_cursor(message: Any) -> Any:
    """``message`` without a ``session/update``'s stream cursor (a copy when it had one)."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return message
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or "acp/cursor" not in meta:
        return message
    meta = {k: v for k, v in meta.items() if k != "acp/cursor"}
    params = {k: v for k, v in params.items() if k != "_meta"}
    if meta:
        params["_meta"] = meta
    return {**message, "params": params}


def normalise(entries: List[Entry], erase_ids: bool = False) -> List[str]:
    """The transcript as comparable lines: ``→`` client to agent, ``←`` agent to client, ``#`` a
    harness event (process start, EOF, exit code)."""
    names = _collect(entries)
    if erase_ids:
        for value, name in list(names.by_value.items()):
            if name.startswith("<session-"):
                names.by_value[value] = "<session>"
            elif name.startswith("<cursor-"):
                names.by_value[value] = "<cursor>"
    patterns = sorted((v for v in names.by_value if len(v) >= _MIN_SUBSTITUTED), key=len, reverse=True)
    request_ids: Dict[str, str] = names.agent_request_ids  # type: ignore[attr-defined]
    lines = []
    for e in entries:
        if e.dir == "note":
            lines.append(f"# p{e.proc} {json.dumps(e.msg, sort_keys=True)}")
            continue
        arrow = "→" if e.dir == "in" else "←"
        if not e.is_json:
            lines.append(f"{arrow} p{e.proc} RAW {json.dumps(_TIME.sub('<time>', e.line))}")
            continue
        msg = _rewrite(_without_cursor(e.msg), names, patterns)
        if isinstance(msg, dict) and "id" in msg:
            key = json.dumps(e.msg["id"])
            from_agent_request = e.dir == "out" and "method" in e.msg
            answer_to_agent = e.dir == "in" and "method" not in e.msg
            if key in request_ids and (from_agent_request or answer_to_agent):
                msg["id"] = request_ids[key]
        lines.append(f"{arrow} p{e.proc} {json.dumps(msg, sort_keys=True)}")
    return lines


def difference(reference_name: str, reference: List[str], name: str, other: List[str], multiset: bool) -> str:
    """A readable diff, or "" when equal."""
    if multiset:
        reference, other = sorted(reference), sorted(other)
    if reference == other:
        return ""
    diff = list(
        difflib.unified_diff(reference, other, fromfile=reference_name, tofile=name, lineterm="", n=2)
    )
    if len(diff) > 160:
        diff = diff[:160] + [f"... ({len(diff) - 160} more diff lines)"]
    return "\n".join(_clip(line) for line in diff)


def _clip(line: str, width: int = 1200) -> str:
    return line if len(line) <= width else line[:width] + f"... (+{len(line) - width} chars)"


def joined(lines: Iterable[str]) -> str:
    return "\n".join(lines) + "\n"
