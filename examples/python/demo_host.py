#!/usr/bin/env python3
"""acp-facade-demo in Python: the demo agent of acp-facade on the Python turn runner.

An ACP agent over stdio (or, with ``--listen``, over Streamable HTTP and WebSocket, HTTPS and WSS with
``--tls-cert`` and ``--tls-key``) with a scripted
"model" and a SQLite store (or PostgreSQL, for a
``postgres://`` URL), behaving exactly like the Rust demo (``examples/demo-agent``) as
``docs/DEMO.md`` describes: ``stream N``, ``think TEXT``, ``tool NAME``, ``sleep MS``,
``ask QUESTION``, ``fail``, ``/compact`` (with its summary), the lines that call the client
(``read PATH``, ``write PATH TEXT…``, ``run CMD ARG…``, ``open URL``), the benchmark's ``readloop N
PATH [PARALLEL]``, ``plan N`` (a plan with an id), ``switch MODE``, ``mcp``, ``edit PATH``,
``/shout TEXT``, ``notice TEXT``, ``system`` (the session's system prompt: the client's
``systemPrompt`` applied to the demo's own), ``subagent TEXT``, ``drip N MS``, a prompt whose first
block is an image, audio, an embedded resource or a resource link, and anything else echoed word by
word; a prompt's ``_meta.traceparent`` comes back in the response's ``_meta``, and the extension
method ``_demo/echo`` answers its params. What ACP gates behind a client capability (notices,
subagents, plans with ids, compaction reports) reaches only a client that advertised it; the others
get the same in other words (see ``docs/DEMO.md``).

usage: demo_host.py [--store PATH|:memory:|postgres://...] [--page-size N] [--auth]
                    [--listen HOST:PORT [--token NAME:SECRET]... [--allow-origin ORIGIN]...
                     [--tls-cert FILE --tls-key FILE]] [--help]

The installed package carries this file as ``acp_facade.demo`` (a link in
``bindings-python/python/acp_facade/``), so the command ``acp-facade-demo`` (and
``python -m acp_facade.demo``) runs it without a checkout.

Nothing but protocol goes to stdout; diagnostics go to stderr.

Start-up: ``main`` starts serving (``Agent.run_stdio``) before :mod:`asyncio` is imported, so that
``initialize`` is answered while Python loads it (about 35 ms). So nothing imported before serving
may import asyncio: the lines that need it (``sleep``, ``drip``, ``readloop``) import it where they
use it, and :mod:`logging` (about 5 ms), :mod:`base64` and :mod:`re` are imported when first used;
:mod:`typing` (about 4 ms, with :mod:`re`) only by type checkers.
"""

from __future__ import annotations

import functools
import os
import sys

import acp_facade
from acp_facade import (
    AcpError,
    Agent,
    ApprovalAction,
    AudioContent,
    AuthMethod,
    Authenticator,
    AvailableCommand,
    ClientError,
    ConfigOption,
    Diff,
    EmbeddedResource,
    ImageContent,
    InternalError,
    McpCapabilities,
    Options,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    PostgresStore,
    PromptCapabilities,
    ResourceLink,
    Runner,
    SelectOption,
    SqliteStore,
    StopReason,
    TextContent,
    TextResourceContents,
    ToolCallLocation,
    ToolCallStatus,
    ToolKind,
    Turn,
    TurnRunner,
    UnsupportedError,
    text_block,
)

PROG = "acp_facade.demo"

USAGE = """usage: acp-facade-demo [--store PATH|:memory:|postgres://...] [--page-size N] [--auth]
                       [--listen HOST:PORT [--token NAME:SECRET]... [--allow-origin ORIGIN]...
                        [--tls-cert FILE --tls-key FILE]]
   or: python -m acp_facade.demo [...]
   or: python examples/python/demo_host.py [...]

An Agent Client Protocol agent over stdio, or remotely with --listen (the acp-facade demo on Python;
docs/DEMO.md).
  --store PATH     where sessions are kept (SQLite); default: $XDG_DATA_HOME/acp-facade/demo.sqlite
  --store URL      a postgres:// (or postgresql://) URL: sessions kept in PostgreSQL, shared by every
                   process using the same database
  --page-size N    the largest session/list page (default 50)
  --auth           require `authenticate` with method demo-login before any session method
  --listen HOST:PORT
                   serve ACP over Streamable HTTP and WebSocket at http://HOST:PORT/acp instead of
                   stdio (port 0: a free port); prints `listening on http://HOST:PORT/acp` on
                   stderr when ready; SIGTERM shuts down gracefully
  --token NAME:SECRET
                   with --listen: clients must send `Authorization: Bearer SECRET` (they act as
                   NAME); repeatable; required for a HOST that is not loopback
  --allow-origin ORIGIN
                   with --listen: allow browser requests from ORIGIN (e.g. https://app.example);
                   repeatable
  --tls-cert FILE --tls-key FILE
                   with --listen: serve HTTPS and WSS with this PEM certificate chain and PEM
                   private key (both or neither); the URL printed is then https://
  -h, --help       this text"""

CONTEXT_SIZE = 200_000
"""The context window the demo reports."""

SHOUT = AvailableCommand("shout", "Repeat the input in capitals", "text")
"""The demo's host-defined slash command."""

COMPACTION_SUMMARY = "The conversation so far, compacted."
"""The summary ``/compact`` reports (``compaction_summary_chunk``)."""

SYSTEM_PROMPT = "You are the acp-facade demo."
"""The demo's own system prompt (``system``), to which a client's ``systemPrompt`` applies."""

PLAN_ID = "plan"
"""The id of the plan ``plan N`` builds."""

# Rust's `char::is_whitespace` (Unicode White_Space), so trimming and splitting match the Rust demo.
_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_U64_MAX = 2**64 - 1

TYPE_CHECKING = False  # typing.TYPE_CHECKING (see the module doc)
if TYPE_CHECKING:
    import logging
    import re
    from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, Union

    from acp_facade import McpServer, PromptBlock


@functools.lru_cache(maxsize=None)
def ws_run() -> "re.Pattern[str]":
    """Runs of whitespace (``_WS``); :mod:`re` is imported at its first use, not at start-up (see
    the module doc)."""
    import re

    return re.compile(f"[{_WS}]+")


def log() -> "logging.Logger":
    """The demo's logger, on stderr; :mod:`logging` is set up at its first use, not at start-up
    (see the module doc)."""
    import logging

    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return logging.getLogger("acp-facade-demo")


def _parse_u64(text: str) -> int:
    """Rust's `text.parse::<u64>().unwrap_or(0)`."""
    digits = text[1:] if text.startswith("+") else text
    if not (digits.isascii() and digits.isdigit()):
        return 0
    value = int(text)
    return value if value <= _U64_MAX else 0


def command_text(prompt: Sequence[PromptBlock]) -> str:
    """The first text block of the prompt, trimmed."""
    for block in prompt:
        if isinstance(block, TextContent):
            return block.text.strip(_WS)
    return ""


def decoded_len(data: str) -> int:
    """The length of base64 ``data`` once decoded (0 when it is not canonical base64, as the Rust
    demo's decoder has it: padded, no stray bits)."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return 0
    return len(decoded) if base64.b64encode(decoded).decode() == data else 0


def block_line(block: PromptBlock) -> Optional[str]:
    """The chunk answering a prompt whose first block is not text, if it is one."""
    if isinstance(block, ImageContent):
        return f"image {block.mime_type} {decoded_len(block.data)}"
    if isinstance(block, AudioContent):
        return f"audio {block.mime_type} {decoded_len(block.data)}"
    if isinstance(block, EmbeddedResource):
        chars = len(block.resource.text) if isinstance(block.resource, TextResourceContents) else 0
        return f"resource {block.resource.uri} {chars}"
    if isinstance(block, ResourceLink):
        return f"link {block.uri}"
    return None


def plan_entries(steps: int, done: int) -> List[PlanEntry]:
    """The entries of a plan of ``steps`` (``step 1`` …), the first ``done`` completed, the rest
    pending."""
    return [
        PlanEntry(
            f"step {i}",
            PlanEntryPriority.MEDIUM,
            PlanEntryStatus.COMPLETED if i <= done else PlanEntryStatus.PENDING,
        )
        for i in range(1, steps + 1)
    ]


def mcp_line(servers: Sequence[McpServer]) -> str:
    """``mcp: NAME(TRANSPORT) …``, or ``mcp: none``."""
    if not servers:
        return "mcp: none"
    return "mcp: " + " ".join(f"{s.name}({s.transport})" for s in servers)


async def demo_echo(params: Any) -> Any:
    """``_demo/echo``: answers its params object as its result."""
    return {} if params is None else params


def split_command(text: str) -> Tuple[str, str]:
    """The verb and the (trimmed) rest of a command."""
    match = ws_run().search(text)
    if match is None:
        return text, ""
    return text[: match.start()], text[match.start() + 1 :].strip(_WS)


def words(text: str) -> List[str]:
    """The words of ``text``, each but the last with a space after it."""
    found = [w for w in ws_run().split(text) if w]
    return [f"{word} " if i + 1 < len(found) else word for i, word in enumerate(found)]


async def report_usage(turn: Turn, prompt: str) -> None:
    """Context usage: the UTF-8 bytes of the prompt plus those of the reply."""
    used = len(prompt.encode()) + len(turn.step_text().encode())
    await turn.usage(used, CONTEXT_SIZE)


# ---- the lines that call the client (DEMO.md: read, write, run, open; edit; readloop) -----------
# Each returns the turn's stop reason. A client that did not advertise the capability gets no
# request: `VERB: not supported by the client`; a client error: `VERB: error CODE MESSAGE`; both
# end `end_turn`. A call cancelled with the turn raises asyncio.CancelledError, which ends the turn
# `cancelled`.


def absolute(turn: Turn, path: str) -> str:
    """``path`` as the client must see it: absolute, relative ones taken from the session's cwd
    (``.`` and repeated separators dropped, as Rust's ``Path::components`` does)."""
    if path.startswith("/"):
        return path
    # Joined by hand: `pathlib`'s import costs about 3.5 ms of every start-up (see default_store).
    return "/" + "/".join(part for part in f"{turn.cwd}/{path}".split("/") if part not in ("", "."))


async def failed(turn: Turn, verb: str, error: ClientError) -> StopReason:
    """Says why a call of ``verb`` failed."""
    if isinstance(error, UnsupportedError):
        await turn.text(f"{verb}: not supported by the client")
    else:
        await turn.text(f"{verb}: error {error.code} {error.message}")
    return StopReason.END_TURN


async def read(turn: Turn, path: str) -> StopReason:
    """``read PATH``: the file's content through the client, as one message chunk."""
    try:
        content = await turn.client.read_text_file(absolute(turn, path))
    except ClientError as e:
        return await failed(turn, "read", e)
    await turn.text(content)
    return StopReason.END_TURN


async def write(turn: Turn, rest: str) -> StopReason:
    """``write PATH TEXT…``: the rest of the line written to PATH through the client."""
    space = next((i for i, c in enumerate(rest) if c in _WS), None)
    path, content = (rest, "") if space is None else (rest[:space], rest[space + 1 :].lstrip(_WS))
    try:
        await turn.client.write_text_file(absolute(turn, path), content)
    except ClientError as e:
        return await failed(turn, "write", e)
    await turn.text("write: ok")
    return StopReason.END_TURN


async def run(turn: Turn, line: str, command: str) -> StopReason:
    """``run CMD ARG…``: the command in a client terminal (cwd the session's), shown in an
    ``execute`` tool call; its exit code as a message chunk. Cancelled while it runs: the handle
    kills and releases the terminal."""
    words = [w for w in ws_run().split(command) if w]
    program, args = (words[0], words[1:]) if words else ("", [])
    try:
        terminal = await turn.client.create_terminal(program, args, cwd=turn.cwd)
    except ClientError as e:
        return await failed(turn, "run", e)
    call = await turn.start_tool(
        line, kind=ToolKind.EXECUTE, status=ToolCallStatus.IN_PROGRESS, content=[terminal.content]
    )
    try:
        exited = await terminal.wait_for_exit()
        await terminal.output()
    except ClientError as e:
        await turn.update_tool(call, status=ToolCallStatus.FAILED)
        return await failed(turn, "run", e)
    code = str(exited.exit_code) if exited.exit_code is not None else (exited.signal or "unknown")
    status = ToolCallStatus.COMPLETED if exited.exit_code == 0 else ToolCallStatus.FAILED
    await turn.update_tool(call, status=status)
    await turn.text(f"exit: {code}")
    try:
        await terminal.release()
    except ClientError as e:
        log().warning("the client failed to release a terminal: %s", e)
    return StopReason.END_TURN


async def open_url(turn: Turn, url: str) -> StopReason:
    """``open URL``: a URL elicitation; accepted, it is completed at once (``elicitation/complete``)."""
    client = turn.client
    try:
        opened = await client.elicit_url(f"Open {url}", url)
    except ClientError as e:
        return await failed(turn, "open", e)
    if opened.answer.action == "accept":
        try:
            await client.complete_elicitation(opened.elicitation_id)
        except ClientError as e:
            return await failed(turn, "open", e)
        await turn.text("opened")
    elif opened.answer.action == "decline":
        await turn.text("declined")
    else:
        return StopReason.CANCELLED
    return StopReason.END_TURN


async def edit(turn: Turn, path: str) -> StopReason:
    """``edit PATH``: an ``edit`` tool call proposing a diff of PATH, completed with a raw output."""
    file = absolute(turn, path)
    call = await turn.start_tool(
        f"edit {path}",
        kind=ToolKind.EDIT,
        status=ToolCallStatus.IN_PROGRESS,
        locations=[ToolCallLocation(file, 1)],
        content=[Diff(file, "new\n", "old\n")],
    )
    await turn.update_tool(call, status=ToolCallStatus.COMPLETED, raw_output={"ok": True})
    await turn.text(f"edited {path}")
    return StopReason.END_TURN


async def read_loop(turn: Turn, rest: str) -> StopReason:
    """``readloop N PATH [PARALLEL]`` (the benchmark's helper): ``fs/read_text_file`` of PATH N
    times, at most PARALLEL (1 when absent or 0) in flight at once; then the chunk
    ``readloop: N``."""
    import asyncio  # loaded by the time a turn runs (see the module doc)

    words = [w for w in ws_run().split(rest) if w]
    count = _parse_u64(words[0]) if words else 0
    path = absolute(turn, words[1] if len(words) > 1 else "")
    parallel = (_parse_u64(words[2]) if len(words) > 2 else 0) or 1
    client = turn.client
    left = count

    # Like the Node demo and the SDK fixtures: PARALLEL workers, each awaiting its reads one after
    # another, rather than a task per read (a task and an `asyncio.wait` over every read in flight
    # cost more than the read itself on the loop's thread).
    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await client.read_text_file(path)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(parallel, count))]
    try:
        await asyncio.gather(*workers)
    except ClientError as e:
        return await failed(turn, "readloop", e)
    finally:
        for task in workers:
            task.cancel()
    await turn.text(f"readloop: {count}")
    return StopReason.END_TURN


# ---- the lines of what ACP gates behind a client capability (DEMO.md, issue 34) -----------------


async def plan_steps(turn: Turn, steps: int) -> StopReason:
    """``plan N``: the plan (with an id; a whole ``plan`` to a client without plan operations),
    then once more per completed step; the chunk ``planned``."""
    for done in range(steps + 1):
        if turn.is_cancelled():
            return StopReason.CANCELLED
        await turn.update_plan(PLAN_ID, plan_entries(steps, done))
    await turn.text("planned")
    return StopReason.END_TURN


async def notice(turn: Turn, text: str) -> StopReason:
    """``notice TEXT``: a notice, or the same as a message chunk for a client without notices."""
    if not await turn.notice(text):
        await turn.text(f"notice: {text}")
    return StopReason.END_TURN


async def subagent(turn: Turn, text: str) -> StopReason:
    """``subagent TEXT``: a child session that is sent TEXT and answers it, word by word; for a
    client without subagents, the text as a message chunk."""
    if not turn.client_capabilities.subagents:
        await turn.text(f"subagent: {text}")
        return StopReason.END_TURN
    child = await turn.start_subagent("subagent")
    await child.send(text)
    await child.reply(words(text))
    await child.finish(StopReason.END_TURN)
    await turn.text("subagent: done")
    return StopReason.END_TURN


async def drip(turn: Turn, rest: str) -> StopReason:
    """``drip N MS``: N chunks ``d1 `` … ``dN ``, one every MS milliseconds. Cancelling the turn
    cancels this task, which ends the turn ``cancelled`` at once."""
    import asyncio  # loaded by the time a turn runs (see the module doc)

    args = [w for w in ws_run().split(rest) if w]
    count = _parse_u64(args[0]) if args else 0
    every = min(_parse_u64(args[1]) if len(args) > 1 else 0, 2**40) / 1000
    for i in range(1, count + 1):
        await asyncio.sleep(every)
        await turn.text(f"d{i} ")
    return StopReason.END_TURN


async def system(turn: Turn) -> StopReason:
    """``system``: the session's system prompt, the client's applied to the demo's own."""
    await turn.text(turn.compose_system_prompt(SYSTEM_PROMPT))
    return StopReason.END_TURN


LINES: Dict[str, Callable[[Turn, str, str], Awaitable[StopReason]]] = {
    "read": lambda turn, text, rest: read(turn, rest),
    "write": lambda turn, text, rest: write(turn, rest),
    "run": run,
    "open": lambda turn, text, rest: open_url(turn, rest),
    "edit": lambda turn, text, rest: edit(turn, rest),
    "readloop": lambda turn, text, rest: read_loop(turn, rest),
    "plan": lambda turn, text, rest: plan_steps(turn, _parse_u64(rest)),
    "notice": lambda turn, text, rest: notice(turn, rest),
    "system": lambda turn, text, rest: system(turn),
    "subagent": lambda turn, text, rest: subagent(turn, rest),
    "drip": lambda turn, text, rest: drip(turn, rest),
}
"""The lines with a function of their own, by verb: ``(turn, text, rest) -> stop``. Those that call
the client (and ``edit``), those of what ACP gates behind a client capability, and ``drip``."""


class Script(TurnRunner):
    """The demo's turn runner."""

    async def run_turn(self, turn: Turn) -> StopReason:
        meta = turn.meta
        if meta is not None and "traceparent" in meta:
            await turn.set_response_meta({"traceparent": meta["traceparent"]})
        prompt = turn.prompt()
        text = command_text(prompt)
        command = turn.command
        line = command.input.upper() if command is not None and command.name == SHOUT.name else None
        if line is None and prompt:
            line = block_line(prompt[0])
        if line is not None:
            await turn.text(line)
            await report_usage(turn, text)
            return StopReason.END_TURN
        verb, rest = split_command(text)
        if verb == "stream":
            for i in range(1, _parse_u64(rest) + 1):
                if turn.is_cancelled():
                    return StopReason.CANCELLED
                await turn.text(f"t{i} ")
        elif verb == "think":
            await turn.thought(rest)
            await turn.text("done thinking")
        elif verb == "tool":
            name = rest or "tool"
            call = await turn.start_tool(name, name=name, kind=ToolKind.EXECUTE, raw_input={"name": name})
            controls = [ApprovalAction.APPROVE, ApprovalAction.APPROVE_ALWAYS, ApprovalAction.DENY]
            answer = await turn.request_permission(call, f"Run {name}", controls)
            if answer is acp_facade.Permission.CANCELLED:
                return StopReason.CANCELLED
            if answer.is_allowed():
                await turn.complete_tool_call(call, [text_block(f"{name} ran")])
                await turn.text(f"{name}: done")
            else:
                await turn.fail_tool_call(call, [text_block(f"{name} was denied")])
                await turn.text(f"{name}: denied")
        elif verb == "sleep":
            # Cancelling the turn cancels this task, which ends the turn `cancelled` at once.
            import asyncio  # loaded by the time a turn runs (see the module doc)

            await asyncio.sleep(min(_parse_u64(rest), 2**40) / 1000)
            await turn.text("slept")
        elif verb == "ask":
            reply = await turn.ask(rest)
            if reply.kind == "answered":
                answer = reply.value
                if not isinstance(answer, str):
                    import json  # only `ask` needs it: imported here, not at every start-up (about 2 ms)

                    answer = json.dumps(answer, separators=(",", ":"), ensure_ascii=False)
                await turn.text(f"answer: {answer}")
            elif reply.kind == "declined":
                await turn.text("declined")
            else:
                return StopReason.CANCELLED
        elif verb in LINES:
            stop = await LINES[verb](turn, text, rest)
            if stop is StopReason.CANCELLED:
                return stop
        elif verb == "fail":
            raise InternalError("the demo turn failed, as asked")
        elif verb == "switch":
            try:
                await turn.set_mode(rest)
                await turn.text(f"mode: {rest}")
            except AcpError:
                await turn.text(f"unknown mode {rest}")
        elif verb == "mcp":
            await turn.text(mcp_line(turn.mcp_servers))
        else:
            for chunk in words(text):
                await turn.text(chunk)
        await report_usage(turn, text)
        return StopReason.END_TURN

    def config_options(self) -> List[ConfigOption]:
        return [
            ConfigOption(
                "mode",
                "Mode",
                "ask",
                [
                    SelectOption("ask", "Ask", "Ask before changing anything"),
                    SelectOption("code", "Code", "Write code directly"),
                ],
                category="mode",
            ),
            ConfigOption("model", "Model", "fast", [SelectOption("fast", "Fast"), SelectOption("smart", "Smart")], category="model"),
        ]

    def commands(self) -> List[AvailableCommand]:
        return [SHOUT]

    def title(self, first_prompt: str) -> Optional[str]:
        title = first_prompt.strip(_WS)[:40]
        return title or None

    def accepts_system_prompt(self) -> bool:
        return True

    async def compact(self, session_id: str) -> Optional[str]:
        return COMPACTION_SUMMARY


def default_store() -> str:
    """`$XDG_DATA_HOME/acp-facade/demo.sqlite`, else `~/.local/share/acp-facade/demo.sqlite`."""
    # `os.path` rather than `pathlib`, whose import (with `urllib.parse` and `ipaddress`) costs
    # about 3 ms of start-up.
    base = os.environ.get("XDG_DATA_HOME") or None
    if base is None:
        home = os.environ.get("HOME")
        if home is None:
            raise ValueError("cannot find a data directory: set XDG_DATA_HOME or HOME, or pass --store")
        return os.path.join(home, ".local/share", "acp-facade", "demo.sqlite")
    return os.path.join(base, "acp-facade", "demo.sqlite")


class DemoLogin(Authenticator):
    """``--auth``: one method, ``demo-login``, with logout. The facade keeps the login state per
    connection; this only says a login is needed and accepts it."""

    def auth_methods(self) -> List[AuthMethod]:
        return [AuthMethod("demo-login", "Demo login")]

    def requires_authentication(self) -> bool:
        return True

    async def authenticate(self, method_id: str) -> None:
        return None

    async def logout(self) -> None:
        return None


class Help(Exception):
    """``--help`` was asked for: print the usage on stdout and exit 0."""


def quoted(text: str) -> str:
    """``text`` in double quotes, as the Rust demo's messages quote what was given."""
    import json

    return json.dumps(text, ensure_ascii=False)


def parse_token(value: str) -> Tuple[str, str]:
    """``--token NAME:SECRET``, both non-empty: ``(name, secret)``."""
    name, sep, secret = value.partition(":")
    if not sep or not name or not secret:
        raise ValueError(f"--token must be NAME:SECRET, got {quoted(value)}")
    return name, secret


class Listen:
    """``--listen``, ``--token``, ``--allow-origin``, ``--tls-cert``/``--tls-key``: where and under
    which rules to serve remotely."""

    def __init__(
        self,
        listen: str,
        tokens: List[Tuple[str, str]],
        origins: List[str],
        tls: Optional[Tuple[str, str]] = None,
    ) -> None:
        """``HOST:PORT`` resolved (its first address), refused (``ValueError``) when it is not
        loopback and no token is given: an agent open to the network must know who calls it.
        ``tls``: the PEM certificate chain and private key to serve HTTPS and WSS with."""
        import ipaddress
        import socket

        host, sep, port = listen.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        elif ":" in host:
            host = ""  # an IPv6 address needs its brackets, as in a URL
        try:
            if not (sep and host and port.isascii() and port.isdigit() and int(port) <= 65535):
                raise ValueError(listen)
            ip = str(socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0][4][0])
        except (OSError, ValueError, IndexError):
            raise ValueError(f"--listen must be HOST:PORT, got {quoted(listen)}") from None
        if not ipaddress.ip_address(ip.partition("%")[0]).is_loopback and not tokens:
            raise ValueError(f"--listen {listen} is not a loopback address: give at least one --token")
        self.address = (ip, int(port))
        self.tokens = {secret: name for name, secret in tokens}
        """Secret to principal name."""
        self.origins = origins
        self.tls = tls

    def serve(self, agent: Agent) -> None:
        """Serves until SIGTERM or Ctrl-C, then shuts down gracefully; says where once ready."""

        def ready(server: acp_facade.RemoteServer) -> None:
            sys.stderr.write(f"listening on {server.url}\n")
            sys.stderr.flush()

        agent.run_http(
            self.address,
            ready=ready,
            token_verifier=self.tokens.get if self.tokens else None,
            allowed_origins=self.origins,
            tls_cert=self.tls[0] if self.tls else None,
            tls_key=self.tls[1] if self.tls else None,
            # Above the default (1024), so that one process can be measured holding ten thousand
            # idle connections (scripts/bench remote); the process's limit of open files bounds it.
            max_connections=16384,
        )


def parse_args(argv: List[str]) -> Tuple[str, int, bool, Optional[Listen]]:
    """The store path, the page size, whether `--auth` is on and where to listen (``None``:
    stdio); `Help` for ``--help``, `ValueError` with the one-line reason for a bad command line."""
    store: Optional[str] = None
    page_size = 50
    auth = False
    listen: Optional[str] = None
    tokens: List[Tuple[str, str]] = []
    origins: List[str] = []
    tls_cert: Optional[str] = None
    tls_key: Optional[str] = None
    args = iter(argv)
    for arg in args:
        if arg == "--store":
            store = next(args, None)
            if store is None:
                raise ValueError("--store needs a path")
        elif arg == "--page-size":
            value = next(args, None)
            if value is None:
                raise ValueError("--page-size needs a number")
            page_size = _parse_u64(value)
            if page_size <= 0:
                raise ValueError(f"--page-size must be a positive number, got {value!r}")
        elif arg == "--auth":
            auth = True
        elif arg == "--listen":
            listen = next(args, None)
            if listen is None:
                raise ValueError("--listen needs HOST:PORT")
        elif arg == "--token":
            value = next(args, None)
            if value is None:
                raise ValueError("--token needs NAME:SECRET")
            tokens.append(parse_token(value))
        elif arg == "--allow-origin":
            origin = next(args, None)
            if origin is None:
                raise ValueError("--allow-origin needs an origin")
            origins.append(origin)
        elif arg == "--tls-cert":
            tls_cert = next(args, None)
            if tls_cert is None:
                raise ValueError("--tls-cert needs a file")
        elif arg == "--tls-key":
            tls_key = next(args, None)
            if tls_key is None:
                raise ValueError("--tls-key needs a file")
        elif arg in ("--help", "-h"):
            raise Help()
        else:
            raise ValueError(f"unknown argument {arg!r}")
    store = store if store is not None else default_store()
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together: give both or neither")
    tls = (tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
    if listen is not None:
        return store, page_size, auth, Listen(listen, tokens, origins, tls)
    if tokens or origins or tls:
        raise ValueError("--token, --allow-origin and --tls-cert/--tls-key need --listen")
    return store, page_size, auth, None


def is_postgres(store: str) -> bool:
    """Whether ``--store`` names a PostgreSQL database rather than an SQLite file."""
    return store.startswith(("postgres://", "postgresql://"))


def open_store(store: str) -> Union[SqliteStore, PostgresStore]:
    """The session store ``--store`` names; ``OSError`` (``ConnectionError`` when a database
    cannot be reached) says why not, naming the server but never the URL's password."""
    return PostgresStore(store) if is_postgres(store) else SqliteStore(store)


def rich(options: Options) -> Options:
    """What the demo accepts beyond text: image, audio and embedded-resource prompts, http MCP
    servers (not sse), and the extension method ``_demo/echo``."""
    return (
        options.prompt_capabilities(PromptCapabilities(image=True, audio=True, embedded_context=True))
        .mcp_capabilities(McpCapabilities(http=True))
        .extension_methods({"_demo/echo": demo_echo})
    )


def demo_agent(store: Union[SqliteStore, PostgresStore], page_size: int, auth: bool) -> Agent:
    """The demo agent over ``store``."""
    runner = Runner(store, Script())
    options = runner.options().agent_info("acp-facade-demo", acp_facade.__version__).max_page_size(page_size)
    options = rich(options.protocol_v2(True))
    if auth:
        options = options.authenticator(DemoLogin())
    return runner.agent(options)


def main() -> int:
    # Before any serving: `--help` answers on stdout, a bad command line with one line on stderr.
    try:
        store, page_size, auth, listen = parse_args(sys.argv[1:])
    except Help:
        sys.stdout.write(USAGE + "\n")
        return 0
    except ValueError as e:
        sys.stderr.write(f"{PROG}: {e} (see --help)\n")
        return 2
    try:
        opened = open_store(store)
    except OSError as e:
        log().error("cannot open the session store: %s", e)
        return 1
    try:
        agent = demo_agent(opened, page_size, auth)
        if listen is not None:
            listen.serve(agent)
        else:
            # Serves at once; the host's coroutines run on an asyncio loop started meanwhile.
            agent.run_stdio()
    except (OSError, ValueError) as e:  # ValueError: TLS files the server cannot use (named)
        log().error("cannot serve: %s", e)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if isinstance(opened, PostgresStore):
            try:
                opened.close()  # this process's sessions are free at once
            except OSError as e:
                log().warning("could not retire this process's lease: %s", e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
