"""The agent's handle on the client (the editor): files, terminals, questions to the user.

A host gets its session's :class:`Client` with the session (:attr:`acp_facade.Setup.client`); a
runner turn gets one tied to the turn (:attr:`acp_facade.Turn.client`). Mirrors
``acp_facade::client`` in the Rust core, which makes the guarantees:

- nothing is sent for a capability the client did not advertise: the call raises
  :class:`acp_facade.UnsupportedError` at once; a relative path raises
  :class:`acp_facade.RelativePathError` (ACP paths are absolute);
- a call is cancelled with its turn (``session/cancel``, close, the client going away): the
  request is abandoned with ``$/cancel_request`` and the ``await`` raises
  :class:`asyncio.CancelledError`; a terminal of a cancelled turn is killed and released;
- the client's JSON-RPC error raises :class:`acp_facade.RejectedError` (its ``code``,
  ``message`` and ``data``); a malformed answer raises :class:`acp_facade.ProtocolError`. Neither
  ends the turn unless the host lets it propagate;
- every :class:`Terminal` is released exactly once: by :meth:`Terminal.release`, when leaving
  ``async with terminal:``, when the object is garbage-collected, when its turn ends, or when its
  session closes.

A turn's calls go out after the updates of everything the turn did before them (its text, its
tool calls), and a session's after the events it published to its hub before them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

from . import _hints
from ._record import field, record
from ._bridge import dispatcher

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple, Type, Union

__all__ = [
    "Client",
    "ClientCapabilities",
    "ElicitationAnswer",
    "ElicitationSchema",
    "Terminal",
    "TerminalExitStatus",
    "TerminalOutput",
    "UrlElicitation",
]

if TYPE_CHECKING:  # the type alias, made at run time when first used (`__getattr__`, below)
    ElicitationSchema = Dict[str, Any]
    """An ACP elicitation form schema in its wire form: ``{"type": "object", "properties": {...},
    "required": [...]}`` with primitive properties (string, number, integer, boolean, or an array of
    enum strings)."""


@record(frozen=True)
class ClientCapabilities:
    """What the client advertised in ``initialize``, read the ACP way."""

    read_text_file: bool = False
    """``fs.readTextFile``: :meth:`Client.read_text_file` may be called."""
    write_text_file: bool = False
    """``fs.writeTextFile``: :meth:`Client.write_text_file` may be called."""
    terminal: bool = False
    """``terminal``: :meth:`Client.create_terminal` may be called."""
    elicitation_form: bool = False
    """``elicitation.form`` (schema v1.21.0): :meth:`Client.elicit_form` may be called."""
    elicitation_url: bool = False
    """``elicitation.url`` (schema v1.21.0): :meth:`Client.elicit_url` and
    :meth:`Client.complete_elicitation` may be called."""
    auth_terminal: bool = False
    """``auth.terminal`` (schema v1.21.0): the client can run terminal authentication methods."""
    meta: Optional[Dict[str, Any]] = None
    """The client's ``_meta`` on its capabilities (its extensions), if any."""
    notices: bool = False
    """``session.notices``: the client shows ``notice`` updates (:meth:`acp_facade.Turn.notice`)."""
    compaction: bool = False
    """``session.compaction``: the client follows a compaction (``compaction_update``) and gets
    its summary (``compaction_summary_chunk``)."""
    subagents: bool = False
    """``subagents``: the client shows child sessions and the messages exchanged with them
    (:meth:`acp_facade.Turn.start_subagent`)."""
    plan_operations: bool = False
    """``plan``: the client takes plans with ids (``plan_update``, ``plan_removed``:
    :meth:`acp_facade.Turn.update_plan`); any other client gets whole ``plan`` updates instead."""


@record(frozen=True)
class ElicitationAnswer:
    """How the user answered an elicitation.

    ``action`` is ``"accept"`` (``values`` holds the form's values by field name; none for a URL),
    ``"decline"`` (the user said no), ``"cancel"`` (dismissed without answering) or ``"other"``
    (an action this schema version does not define, named by ``other``).
    """

    action: str
    values: Dict[str, Any] = field(default_factory=dict)
    other: Optional[str] = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted."""
        return self.action == "accept"

    @classmethod
    def _from_native(cls, answer: Tuple[str, Any, Optional[str]]) -> "ElicitationAnswer":
        action, values, other = answer
        return cls(action, dict(values or {}), other)


@record(frozen=True)
class UrlElicitation:
    """The outcome of :meth:`Client.elicit_url`: the elicitation's id (for
    :meth:`Client.complete_elicitation`) and the user's answer."""

    elicitation_id: str
    answer: ElicitationAnswer


@record(frozen=True)
class TerminalExitStatus:
    """How a terminal's command ended: its exit code, or the signal that ended it."""

    exit_code: Optional[int] = None
    signal: Optional[str] = None

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "TerminalExitStatus":
        return cls(data.get("exitCode"), data.get("signal"))


@record(frozen=True)
class TerminalOutput:
    """A terminal's output so far, whether the client truncated it, and its exit status once the
    command has exited."""

    output: str
    truncated: bool = False
    exit_status: Optional[TerminalExitStatus] = None

    @classmethod
    def _from_json(cls, data: Dict[str, Any]) -> "TerminalOutput":
        status = data.get("exitStatus")
        return cls(
            str(data.get("output", "")),
            bool(data.get("truncated", False)),
            None if status is None else TerminalExitStatus._from_json(status),
        )


def _env(env: Union[Mapping[str, str], Sequence[Any], None]) -> List[Tuple[str, str]]:
    if env is None:
        return []
    if isinstance(env, Mapping):
        return [(str(k), str(v)) for k, v in env.items()]
    pairs: List[Tuple[str, str]] = []
    for item in env:
        if isinstance(item, Mapping):
            pairs.append((str(item["name"]), str(item["value"])))
        else:
            name, value = item
            pairs.append((str(name), str(value)))
    return pairs


class Terminal:
    """A terminal the client runs for the agent (from :meth:`Client.create_terminal`).

    Released exactly once: by :meth:`release`, when leaving ``async with terminal:``, when this
    object is garbage-collected, when its turn ends (killed first when the turn was cancelled), or
    when its session closes. After that every call raises :class:`acp_facade.ReleasedError`,
    sending nothing (but :meth:`release` again succeeds and sends nothing).
    """

    __slots__ = ("_n",)

    def __init__(self, native: Any) -> None:
        self._n = native

    @property
    def id(self) -> str:
        """The terminal's id."""
        return str(self._n.id)

    @property
    def content(self) -> Dict[str, Any]:
        """Tool-call content embedding the terminal's live output, ``{"type": "terminal",
        "terminalId": id}``: put it in a tool call before releasing the terminal."""
        content: Dict[str, Any] = self._n.content()
        return content

    def is_released(self) -> bool:
        """Whether the terminal was released."""
        return bool(self._n.is_released())

    async def output(self) -> TerminalOutput:
        """The output so far (``terminal/output``)."""
        return TerminalOutput._from_json(await dispatcher.wait(self._n.output))

    async def wait_for_exit(self) -> TerminalExitStatus:
        """Waits until the command exits (``terminal/wait_for_exit``); cancelled with the turn,
        which kills and releases the terminal."""
        return TerminalExitStatus._from_json(await dispatcher.wait(self._n.wait_for_exit))

    async def kill(self) -> None:
        """Kills the command (``terminal/kill``); the terminal stays usable until released."""
        await dispatcher.wait(self._n.kill)

    async def release(self) -> None:
        """Releases the terminal (``terminal/release``; the client kills the command if it still
        runs). Once: a terminal already released sends nothing and returns."""
        await dispatcher.wait(self._n.release)

    async def __aenter__(self) -> "Terminal":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"Terminal(id={self.id!r}, released={self.is_released()})"


class Client:
    """The agent's handle on the client (see the module doc for its guarantees)."""

    __slots__ = ("_n",)

    def __init__(self, native: Any) -> None:
        self._n = native

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client advertised."""
        return ClientCapabilities(**self._n.capabilities())

    @property
    def session_id(self) -> Optional[str]:
        """The session's id, once the session is established."""
        session_id: Optional[str] = self._n.session_id
        return session_id

    def is_cancelled(self) -> bool:
        """Whether calls through this handle are cancelled now (its turn was cancelled, its
        session closed, the client went away)."""
        return bool(self._n.is_cancelled())

    async def read_text_file(self, path: str, line: Optional[int] = None, limit: Optional[int] = None) -> str:
        """Reads a text file through the client (``fs/read_text_file``): the editor's buffer when
        the file is open, unsaved edits included. ``line`` is the 1-based first line, ``limit``
        the most lines to read. A missing file is conventionally the client's ``-32002``
        (:class:`acp_facade.RejectedError`)."""
        content: str = await dispatcher.wait(self._n.read_text_file, str(path), line, limit)
        return content

    async def write_text_file(self, path: str, content: str) -> None:
        """Writes a text file through the client (``fs/write_text_file``); the client creates
        it when missing."""
        await dispatcher.wait(self._n.write_text_file, str(path), content)

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Union[Mapping[str, str], Sequence[Any], None] = None,
        cwd: Optional[str] = None,
        output_byte_limit: Optional[int] = None,
    ) -> Terminal:
        """Starts ``command`` with ``args`` in a terminal of the client (``terminal/create``);
        the command runs on after this returns. ``env`` adds environment variables (a mapping,
        or ``{"name", "value"}`` items), ``cwd`` (absolute) sets the working directory,
        ``output_byte_limit`` caps the output the client keeps."""
        native = await dispatcher.wait(
            self._n.create_terminal,
            str(command),
            [str(a) for a in args],
            _env(env),
            None if cwd is None else str(cwd),
            output_byte_limit,
        )
        return Terminal(native)

    async def elicit_form(self, message: str, schema: ElicitationSchema) -> ElicitationAnswer:
        """Asks the user to fill in a form (``elicitation/create``, form mode) described by
        ``schema``; never for secrets (passwords, keys, tokens: use :meth:`elicit_url`). An
        accepted answer that does not fit the schema raises :class:`acp_facade.ProtocolError`."""
        return ElicitationAnswer._from_native(await dispatcher.wait(self._n.elicit_form, message, schema))

    async def elicit_url(self, message: str, url: str) -> UrlElicitation:
        """Asks the user to open ``url`` (``elicitation/create``, URL mode) under a fresh
        elicitation id. Accepting only means the user agreed to open it: when the step behind
        it is done, call :meth:`complete_elicitation`. A URL that is not absolute raises
        :class:`acp_facade.InvalidArgumentError`."""
        elicitation_id, answer = await dispatcher.wait(self._n.elicit_url, message, url)
        return UrlElicitation(str(elicitation_id), ElicitationAnswer._from_native(answer))

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tells the client that the step behind a URL elicitation is done
        (``elicitation/complete``)."""
        await dispatcher.wait(self._n.complete_elicitation, elicitation_id)

    async def release_terminals(self) -> None:
        """Releases every terminal created through this handle's turn (the session's handle:
        every terminal of the session) and not released yet."""
        await dispatcher.wait(self._n.release_terminals)

    def __repr__(self) -> str:
        return f"Client(session_id={self.session_id!r})"


if not TYPE_CHECKING:

    def _make_aliases() -> Dict[str, Any]:
        from typing import Any, Dict

        return {"ElicitationSchema": Dict[str, Any]}

    __getattr__ = _hints.aliases(__name__, ("ElicitationSchema",), _make_aliases)
