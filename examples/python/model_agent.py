#!/usr/bin/env python3
"""A model-backed ACP agent in Python: any OpenAI-compatible Chat Completions server (OpenAI, vLLM,
llama.cpp, Ollama, …) behind the acp-facade turn runner, with durable, resumable sessions.

Each turn sends the model the system prompt (the agent's, with the client's applied), the
session's conversation so far (``turn.history``: from the journal, so it survives a restart) and
the prompt; streams the answer to the editor (text as message chunks, ``reasoning_content`` as
thoughts); runs the tools the model calls through the editor (``read_file``; ``write_file`` and
``edit_file`` shown as a diff and written only with the user's permission; ``run_command`` in the
editor's terminal, with permission) and sends their results back, until the model answers without
a tool call (at most ``MAX_STEPS`` model calls). Cancelling the turn cancels this task, which
closes the HTTP stream. A model or HTTP error fails the prompt with the error's message.

Environment: ``OPENAI_MODEL`` (required), ``OPENAI_BASE_URL`` (default
https://api.openai.com/v1), ``OPENAI_API_KEY`` (optional for local servers), ``MODEL_AGENT_STORE``
(the SQLite file; default ``$XDG_DATA_HOME/acp-facade/model-agent.sqlite``).
Needs ``httpx`` (``pip install httpx==0.28.1``). Guide: docs/calling-a-real-model-python.md.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import httpx

from acp_facade import (
    ApprovalAction,
    AssistantEntry,
    ClientError,
    Diff,
    HistoryEntry,
    Permission,
    Runner,
    SqliteStore,
    StopReason,
    SummaryEntry,
    ToolCallEntry,
    ToolCallStatus,
    ToolKind,
    Turn,
    TurnRunner,
    UserEntry,
    text_block,
)

log = logging.getLogger("model_agent")

MAX_STEPS = 10
"""The most model calls one turn makes: then it stops with ``max_turn_requests``."""

HISTORY = 100
"""How many entries of the session's conversation each model call sees."""

SYSTEM = "You are a coding agent. The user's project is in {cwd}. Use the tools to read, change and run things there."


def _function(name: str, description: str, **params: str) -> Dict[str, Any]:
    properties = {p: {"type": "string", "description": d} for p, d in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(params)},
        },
    }


TOOLS = [
    _function("read_file", "Read a text file.", path="absolute, or relative to the project"),
    _function("write_file", "Create or overwrite a text file.", path="the file", content="its new text"),
    _function(
        "edit_file", "Replace text in a file.", path="the file", old_text="text to find", new_text="its new text"
    ),
    _function("run_command", "Run a shell command in the project directory.", command="the command line"),
]


class ModelError(Exception):
    """What went wrong talking to the model: the prompt fails with this message."""


def history_messages(entries: List[HistoryEntry]) -> List[Dict[str, Any]]:
    """The session's conversation (``turn.history``) as Chat Completions messages."""
    messages: List[Dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, UserEntry):
            messages.append({"role": "user", "content": entry.text})
        elif isinstance(entry, AssistantEntry):
            messages.append({"role": "assistant", "content": entry.text})
        elif isinstance(entry, SummaryEntry):
            messages.append({"role": "user", "content": f"Summary of the conversation so far:\n{entry.text}"})
        elif isinstance(entry, ToolCallEntry) and entry.name:
            function = {"name": entry.name, "arguments": json.dumps(entry.input or {})}
            call = {"id": entry.id, "type": "function", "function": function}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": entry.id, "content": entry.text or "(no output)"})
        # Thoughts stay out: models do not take their reasoning back.
    return messages


class ModelAgent(TurnRunner):
    def __init__(self) -> None:
        self.model = os.environ.get("OPENAI_MODEL", "")
        self.url = (os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"
        key = os.environ.get("OPENAI_API_KEY")
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=10.0))

    def accepts_system_prompt(self) -> bool:
        return True

    async def run_turn(self, turn: Turn) -> StopReason:
        if not self.model:
            raise ModelError("OPENAI_MODEL is not set: start the agent with the model's name in OPENAI_MODEL")
        system = turn.compose_system_prompt(SYSTEM.format(cwd=turn.cwd))
        messages: List[Dict[str, Any]] = [{"role": "system", "content": system}]
        messages += history_messages(await turn.history(limit=HISTORY))
        messages.append({"role": "user", "content": turn.prompt_text()})
        for _ in range(MAX_STEPS):
            text, calls = await self.stream(turn, messages)
            if not calls:
                return StopReason.END_TURN
            messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
            for call in calls:
                result = await run_tool(turn, call["function"]["name"], call["function"]["arguments"])
                if result is None:
                    return StopReason.CANCELLED
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            await turn.end_step()
        await turn.text(f"\n\n(Stopped: {MAX_STEPS} model calls in one turn.)")
        return StopReason.MAX_TURN_REQUESTS

    async def stream(self, turn: Turn, messages: List[Dict[str, Any]]) -> Tuple[str, List[Dict[str, Any]]]:
        """One model call, streamed to the editor: the answer's text and its tool calls."""
        body = {"model": self.model, "messages": messages, "tools": TOOLS, "stream": True}
        text = ""
        calls: Dict[int, Dict[str, Any]] = {}  # the tool calls by their stream index
        try:
            async with self.http.stream("POST", self.url, json=body, headers=self.headers) as response:
                if response.status_code >= 300:
                    raise ModelError(f"the model server answered {response.status_code}: {await error_text(response)}")
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # blank lines, SSE comments, `event:` lines
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                        choices = chunk.get("choices") or []
                    except (ValueError, AttributeError):
                        raise ModelError(f"the model server sent a malformed stream line: {data[:200]}") from None
                    if chunk.get("error"):  # a failure after the stream started
                        raise ModelError(f"the model server failed mid-stream: {message_of(chunk['error'])}")
                    for choice in choices:
                        delta = choice.get("delta") or {}
                        if delta.get("reasoning_content"):
                            await turn.thought(delta["reasoning_content"])
                        if delta.get("content"):
                            text += delta["content"]
                            await turn.text(delta["content"])
                        for part in delta.get("tool_calls") or []:
                            empty = {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                            call = calls.setdefault(part.get("index", 0), empty)
                            call["id"] = part.get("id") or call["id"]
                            function = part.get("function") or {}
                            call["function"]["name"] += function.get("name") or ""
                            call["function"]["arguments"] += function.get("arguments") or ""
        except httpx.HTTPError as e:
            raise ModelError(f"cannot talk to the model server at {self.url}: {e or type(e).__name__}") from None
        return text, [calls[i] for i in sorted(calls)]


async def error_text(response: httpx.Response) -> str:
    """The message of an OpenAI-style error body, else the body itself."""
    body = (await response.aread()).decode("utf-8", "replace")
    try:
        return message_of(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body[:500] or response.reason_phrase


def message_of(error: Any) -> str:
    """The ``message`` of an OpenAI-style ``error`` object, else the object as text."""
    return str(error.get("message") or error) if isinstance(error, dict) else str(error)


async def run_tool(turn: Turn, name: str, arguments: str) -> Optional[str]:
    """Runs one tool call through the editor: what the model is told, or ``None`` if the user
    cancelled the turn."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return f"error: the arguments of {name} are not a JSON object: {arguments}"
    path = str(Path(turn.cwd, args.get("path", ""))) if "path" in args else ""
    if name == "read_file":
        call = await turn.start_tool(f"Read {path}", name=name, kind=ToolKind.READ, raw_input=args)
        try:
            content = await turn.client.read_text_file(path)
        except ClientError as e:  # a missing file, the editor refused: the model is told
            await turn.fail_tool_call(call, [text_block(f"error: {e}")])
            return f"error: {e}"
        await turn.complete_tool_call(call, [text_block(content)])
        return content
    if name in ("write_file", "edit_file"):
        return await change_file(turn, name, path, args)
    if name == "run_command":
        return await run_command(turn, args)
    return f"error: there is no tool {name}"


async def change_file(turn: Turn, name: str, path: str, args: Dict[str, Any]) -> Optional[str]:
    """``write_file`` / ``edit_file``: the change shown as a diff, written only when allowed."""
    try:
        old: Optional[str] = await turn.client.read_text_file(path)
    except ClientError:
        old = None  # a new file
    if name == "write_file":
        new = str(args.get("content", ""))
    elif old is None or not args.get("old_text") or args["old_text"] not in old:
        return f"error: the text to replace is not in {path}"
    else:
        new = old.replace(args["old_text"], str(args.get("new_text", "")), 1)
    diff = Diff(path=path, old_text=old, new_text=new)
    call = await turn.start_tool(f"Edit {path}", name=name, kind=ToolKind.EDIT, content=[diff], raw_input=args)
    answer = await turn.request_permission(call, f"Write {path}?", [ApprovalAction.APPROVE, ApprovalAction.DENY])
    if answer is Permission.CANCELLED:
        return None
    if not answer.is_allowed():
        await turn.update_tool(call, status=ToolCallStatus.FAILED, content=[diff, text_block("rejected by the user")])
        return "The user rejected this change: the file was not written."
    try:
        await turn.client.write_text_file(path, new)
    except ClientError as e:
        await turn.update_tool(call, status=ToolCallStatus.FAILED, content=[diff, text_block(f"error: {e}")])
        return f"error: {e}"
    await turn.update_tool(call, status=ToolCallStatus.COMPLETED, content=[diff, text_block(f"wrote {path}")])
    return f"wrote {path}"


async def run_command(turn: Turn, args: Dict[str, Any]) -> Optional[str]:
    """``run_command``: with permission, in a terminal of the editor shown in the tool call."""
    command = str(args.get("command", ""))
    call = await turn.start_tool(command, name="run_command", kind=ToolKind.EXECUTE, raw_input=args)
    answer = await turn.request_permission(call, f"Run `{command}`?", [ApprovalAction.APPROVE, ApprovalAction.DENY])
    if answer is Permission.CANCELLED:
        return None
    if not answer.is_allowed():
        await turn.fail_tool_call(call, [text_block("rejected by the user")])
        return "The user rejected this command: it did not run."
    try:
        terminal = await turn.client.create_terminal("sh", ["-c", command], cwd=turn.cwd, output_byte_limit=64_000)
    except ClientError as e:  # the editor has no terminals, or refused
        await turn.fail_tool_call(call, [text_block(f"error: {e}")])
        return f"error: {e}"
    async with terminal:
        await turn.update_tool(call, status=ToolCallStatus.IN_PROGRESS, content=[terminal.content])
        status = await terminal.wait_for_exit()
        output = (await terminal.output()).output
    ended = f"exit code {status.exit_code}" if status.exit_code is not None else f"killed by {status.signal}"
    result = f"$ {command}\n{output}\n({ended})"
    done = ToolCallStatus.COMPLETED if status.exit_code == 0 else ToolCallStatus.FAILED
    await turn.update_tool(call, status=done, content=[terminal.content, text_block(result)])
    return result


def default_store() -> str:
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    os.makedirs(os.path.join(data, "acp-facade"), exist_ok=True)
    return os.path.join(data, "acp-facade", "model-agent.sqlite")


def main() -> None:
    logging.basicConfig(level=logging.WARNING)  # to stderr: stdout is the protocol
    if not os.environ.get("OPENAI_MODEL"):
        log.warning("OPENAI_MODEL is not set: every prompt will fail until it is")
    runner = Runner(SqliteStore(os.environ.get("MODEL_AGENT_STORE") or default_store()), ModelAgent())
    runner.agent(runner.options().agent_info("model-agent", "0.1.0")).run_stdio()


if __name__ == "__main__":
    main()
