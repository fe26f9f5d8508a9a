"""A session's conversation as a turn reads it (:meth:`acp_facade.Turn.history`): its earlier
turns' user prompts, assistant messages, thoughts and tool calls, typed, oldest first, with what a
compaction replaced standing as one :class:`SummaryEntry` first.

Each entry is a plain class with ``__slots__``, compared by value; its class attribute ``type``
tells which kind it is (``"user"``, ``"assistant"``, ``"thought"``, ``"tool_call"``,
``"summary"``), so a turn can dispatch on ``entry.type`` or on ``isinstance``. The entries are
built from the runner's journal, in the order things happened; the turn's own prompt is never one
of them. See the Rust crate's ``history`` module for how events become entries.
"""

from __future__ import annotations

from .acp import Diff, TerminalContent, TextContent, prompt_block_from_json
from .harness import ToolCallStatus, ToolKind

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Dict, List, Optional, Tuple, Union

    from .acp import PromptBlock

__all__ = [
    "AssistantEntry",
    "HistoryEntry",
    "SummaryEntry",
    "ThoughtEntry",
    "ToolCallEntry",
    "UserEntry",
    "history_from_json",
]


class HistoryEntry:
    """One entry of a session's conversation; see the subclasses. ``type`` names its kind."""

    __slots__ = ()
    if TYPE_CHECKING:
        type: ClassVar[str]

    def _fields(self) -> Tuple[str, ...]:
        """The names of its fields: its class's slots."""
        names: Tuple[str, ...] = getattr(type(self), "__slots__")
        return names

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._fields())

    __hash__ = None  # type: ignore[assignment]  # compared by value, and mutable: unhashable

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{type(self).__name__}({fields})"


class UserEntry(HistoryEntry):
    """A user prompt: ``text`` (its text blocks, joined) and ``content`` (its blocks, typed, as
    the client sent them)."""

    __slots__ = ("text", "content")
    type = "user"

    def __init__(self, text: str, content: List[PromptBlock]) -> None:
        self.text = text
        self.content = content


class AssistantEntry(HistoryEntry):
    """One assistant message (a step's reply): ``text``."""

    __slots__ = ("text",)
    type = "assistant"

    def __init__(self, text: str) -> None:
        self.text = text


class ThoughtEntry(HistoryEntry):
    """One thought (a step's reasoning): ``text``."""

    __slots__ = ("text",)
    type = "thought"

    def __init__(self, text: str) -> None:
        self.text = text


class SummaryEntry(HistoryEntry):
    """A compaction's summary, standing for every entry before it: ``text``."""

    __slots__ = ("text",)
    type = "summary"

    def __init__(self, text: str) -> None:
        self.text = text


class ToolCallEntry(HistoryEntry):
    """One tool call with its final state: ``id``; ``name`` (its programmatic name, or ``None``);
    ``title``; ``kind`` (:class:`ToolKind`); ``status`` (:class:`ToolCallStatus`: ``completed``
    or ``failed``, ``pending`` when no result was recorded); ``input`` and ``output`` (its raw
    input and output, any JSON value, ``None`` when absent); ``content`` (content blocks, typed,
    :class:`Diff` and :class:`TerminalContent` items; an item of a kind this package does not
    know stays its wire form, a dict). :attr:`text` joins the text of its text blocks."""

    __slots__ = ("id", "name", "title", "kind", "status", "input", "output", "content")
    type = "tool_call"

    def __init__(
        self,
        id: str,
        name: Optional[str],
        title: str,
        kind: Union[ToolKind, str],
        status: Union[ToolCallStatus, str],
        input: Any,
        output: Any,
        content: List[Union[PromptBlock, Diff, TerminalContent, Dict[str, Any]]],
    ) -> None:
        self.id = id
        self.name = name
        self.title = title
        self.kind = kind
        self.status = status
        self.input = input
        self.output = output
        self.content = content

    @property
    def text(self) -> str:
        """The text of its content's text blocks, joined with ``"\\n"``."""
        return "\n".join(item.text for item in self.content if isinstance(item, TextContent))


def _enum(cls: Any, value: str) -> Any:
    """``value`` as a member of ``cls``, or the string itself for a value it does not know."""
    try:
        return cls(value)
    except ValueError:
        return value


def _block(data: Dict[str, Any]) -> Any:
    """A content block, typed (its wire form, for a type this package does not know)."""
    try:
        return prompt_block_from_json(data)
    except ValueError:
        return data


_TOOL_CONTENT: Dict[str, Any] = {
    "content": lambda data: _block(data["content"]),
    "diff": Diff.from_json,
    "terminal": TerminalContent.from_json,
}


def _entry(data: Dict[str, Any]) -> Optional[HistoryEntry]:
    kind = data.get("type")
    if kind == "user":
        return UserEntry(data["text"], [_block(b) for b in data["content"]])
    if kind == "assistant":
        return AssistantEntry(data["text"])
    if kind == "thought":
        return ThoughtEntry(data["text"])
    if kind == "summary":
        return SummaryEntry(data["text"])
    if kind == "tool_call":
        content = [_TOOL_CONTENT.get(item.get("type"), lambda d: d)(item) for item in data["content"]]
        return ToolCallEntry(
            data["id"],
            data.get("name"),
            data["title"],
            _enum(ToolKind, data["kind"]),
            _enum(ToolCallStatus, data["status"]),
            data.get("input"),
            data.get("output"),
            content,
        )
    return None


def history_from_json(data: List[Dict[str, Any]]) -> List[HistoryEntry]:
    """The entries of the native history's wire form (an entry of a kind this package does not
    know is left out)."""
    entries = (_entry(item) for item in data)
    return [entry for entry in entries if entry is not None]
