"""ACP values, typed: what a prompt can hold, the MCP servers a client hands a session, plans,
costs, slash commands, and what the agent advertises it accepts.

These mirror the wire types the Rust core re-exports as ``acp_facade::acp`` (schema v1.21.0), with
Python names (``mime_type`` for ``mimeType``). Every class is a dataclass that converts to its ACP
wire (JSON) form with ``to_json()`` and back with ``from_json()``; wherever the package takes one of
these values it also takes its wire form as a plain dict. ``meta`` is ACP's ``_meta``: extra data a
client or agent attaches, passed through as is.
"""

from __future__ import annotations

from enum import Enum

from . import _hints
from ._record import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Dict, List, Optional, Union

__all__ = [
    "AudioContent",
    "AvailableCommand",
    "BlobResourceContents",
    "Cost",
    "Diff",
    "EmbeddedResource",
    "EnvVariable",
    "HttpHeader",
    "ImageContent",
    "McpCapabilities",
    "McpServer",
    "McpServerHttp",
    "McpServerSse",
    "McpServerStdio",
    "Meta",
    "NoticeSeverity",
    "Plan",
    "PlanEntry",
    "PlanEntryPriority",
    "PlanEntryStatus",
    "PromptBlock",
    "PromptCapabilities",
    "ResourceLink",
    "SystemPrompt",
    "TextContent",
    "TerminalContent",
    "TextResourceContents",
    "ToolCallContent",
    "ToolCallLocation",
    "mcp_server_from_json",
    "prompt_block_from_json",
    "tool_content_json",
]

if TYPE_CHECKING:  # the type aliases, made at run time when first used (`__getattr__`, below)
    Meta = Dict[str, Any]
    """ACP ``_meta``: extra data attached to a message or value (for example a W3C ``traceparent``)."""


def _with_meta(out: Dict[str, Any], meta: Optional[Meta]) -> Dict[str, Any]:
    if meta is not None:
        out["_meta"] = dict(meta)
    return out


def _optional(out: Dict[str, Any], **fields: Any) -> Dict[str, Any]:
    for key, value in fields.items():
        if value is not None:
            out[key] = value
    return out


# ---- content blocks ---------------------------------------------------------------------------


@record
class TextContent:
    """A text block (ACP ``TextContent``, ``{"type": "text"}``)."""

    # A class constant (here and below) is declared a `ClassVar` for type checkers only: `dataclass`
    # would need the name `ClassVar` bound at run time, where typing is not imported
    # (ARCHITECTURE.md, "Start-up (Python)"); unannotated, it is no field either.
    if TYPE_CHECKING:
        type: ClassVar[str]
    type = "text"
    text: str
    annotations: Any = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta(_optional({"type": self.type, "text": self.text}, annotations=self.annotations), self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "TextContent":
        """Builds one from the ACP wire form."""
        return cls(str(data.get("text", "")), data.get("annotations"), data.get("_meta"))


@record
class ImageContent:
    """An image (ACP ``ImageContent``): base64 ``data`` of type ``mime_type``; accepted in a prompt
    when the agent advertises ``PromptCapabilities.image``."""

    if TYPE_CHECKING:
        type: ClassVar[str]
    type = "image"
    data: str
    mime_type: str
    uri: Optional[str] = None
    annotations: Any = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out = {"type": self.type, "data": self.data, "mimeType": self.mime_type}
        return _with_meta(_optional(out, uri=self.uri, annotations=self.annotations), self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ImageContent":
        """Builds one from the ACP wire form."""
        return cls(data["data"], data["mimeType"], data.get("uri"), data.get("annotations"), data.get("_meta"))


@record
class AudioContent:
    """Audio (ACP ``AudioContent``): base64 ``data`` of type ``mime_type``; accepted in a prompt when
    the agent advertises ``PromptCapabilities.audio``."""

    if TYPE_CHECKING:
        type: ClassVar[str]
    type = "audio"
    data: str
    mime_type: str
    annotations: Any = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out = {"type": self.type, "data": self.data, "mimeType": self.mime_type}
        return _with_meta(_optional(out, annotations=self.annotations), self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "AudioContent":
        """Builds one from the ACP wire form."""
        return cls(data["data"], data["mimeType"], data.get("annotations"), data.get("_meta"))


@record
class ResourceLink:
    """A link to a resource the agent can read itself (ACP ``ResourceLink``); always accepted."""

    if TYPE_CHECKING:
        type: ClassVar[str]
    type = "resource_link"
    uri: str
    name: str
    title: Optional[str] = None
    description: Optional[str] = None
    mime_type: Optional[str] = None
    size: Optional[int] = None
    annotations: Any = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out = _optional(
            {"type": self.type, "uri": self.uri, "name": self.name},
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
            size=self.size,
            annotations=self.annotations,
        )
        return _with_meta(out, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ResourceLink":
        """Builds one from the ACP wire form."""
        return cls(
            data["uri"],
            data.get("name", ""),
            data.get("title"),
            data.get("description"),
            data.get("mimeType"),
            data.get("size"),
            data.get("annotations"),
            data.get("_meta"),
        )


@record
class TextResourceContents:
    """The text of an embedded resource."""

    uri: str
    text: str
    mime_type: Optional[str] = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta(_optional({"uri": self.uri, "text": self.text}, mimeType=self.mime_type), self.meta)


@record
class BlobResourceContents:
    """The binary contents of an embedded resource (base64 ``blob``)."""

    uri: str
    blob: str
    mime_type: Optional[str] = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta(_optional({"uri": self.uri, "blob": self.blob}, mimeType=self.mime_type), self.meta)


@record
class EmbeddedResource:
    """A resource whose contents the client embedded (ACP ``EmbeddedResource``); accepted in a prompt
    when the agent advertises ``PromptCapabilities.embedded_context``."""

    if TYPE_CHECKING:
        type: ClassVar[str]
    type = "resource"
    resource: Union[TextResourceContents, BlobResourceContents]
    annotations: Any = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out = {"type": self.type, "resource": self.resource.to_json()}
        return _with_meta(_optional(out, annotations=self.annotations), self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "EmbeddedResource":
        """Builds one from the ACP wire form."""
        raw = data["resource"]
        resource: Union[TextResourceContents, BlobResourceContents]
        if "text" in raw:
            resource = TextResourceContents(raw["uri"], raw["text"], raw.get("mimeType"), raw.get("_meta"))
        else:
            resource = BlobResourceContents(raw["uri"], raw.get("blob", ""), raw.get("mimeType"), raw.get("_meta"))
        return cls(resource, data.get("annotations"), data.get("_meta"))



if TYPE_CHECKING:
    PromptBlock = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]
    """One block of a prompt, typed (ACP ``ContentBlock``)."""

_BLOCKS: Dict[str, Any] = {
    cls.type: cls for cls in (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
}


def prompt_block_from_json(data: Dict[str, Any]) -> PromptBlock:
    """The typed block of an ACP ``ContentBlock`` in its wire form; ``ValueError`` for a type this
    package does not know."""
    cls = _BLOCKS.get(data.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown content block type {data.get('type')!r}")
    block: PromptBlock = cls.from_json(data)
    return block


@record
class PromptCapabilities:
    """The prompt content an agent accepts beyond text and resource links (ACP
    ``promptCapabilities``). A prompt with a block it does not advertise is refused (``-32602``)
    before the host sees it."""

    image: bool = False
    audio: bool = False
    embedded_context: bool = False

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return {"image": self.image, "audio": self.audio, "embeddedContext": self.embedded_context}


# ---- MCP servers ------------------------------------------------------------------------------


@record
class EnvVariable:
    """An environment variable of a stdio MCP server."""

    name: str
    value: str
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta({"name": self.name, "value": self.value}, self.meta)


@record
class HttpHeader:
    """An HTTP header of an http or sse MCP server."""

    name: str
    value: str
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta({"name": self.name, "value": self.value}, self.meta)


@record
class McpServerStdio:
    """An MCP server the agent starts itself: ``command`` with ``args`` and ``env`` (every agent
    accepts these)."""

    if TYPE_CHECKING:
        transport: ClassVar[str]
    transport = "stdio"
    name: str
    command: str
    args: List[str] = field(default_factory=list)
    env: List[EnvVariable] = field(default_factory=list)
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out = {"name": self.name, "command": self.command, "args": list(self.args), "env": [e.to_json() for e in self.env]}
        return _with_meta(out, self.meta)


@record
class _McpServerAtUrl:
    """What the two transports at a URL share: their fields and their wire form."""

    if TYPE_CHECKING:
        transport: ClassVar[str]
    name: str
    url: str
    headers: List[HttpHeader] = field(default_factory=list)
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out = {"type": self.transport, "name": self.name, "url": self.url, "headers": [h.to_json() for h in self.headers]}
        return _with_meta(out, self.meta)


@record
class McpServerHttp(_McpServerAtUrl):
    """An MCP server over HTTP at ``url`` (accepted when the agent advertises
    ``McpCapabilities.http``)."""

    transport = "http"


@record
class McpServerSse(_McpServerAtUrl):
    """An MCP server over server-sent events at ``url`` (accepted when the agent advertises
    ``McpCapabilities.sse``)."""

    transport = "sse"


if TYPE_CHECKING:
    McpServer = Union[McpServerStdio, McpServerHttp, McpServerSse]
    """An MCP server a client asked a session to use (ACP ``McpServer``); ``transport`` tells which."""


def _pairs(cls: Any, items: Any) -> List[Any]:
    return [cls(i["name"], i["value"], i.get("_meta")) for i in items or []]


def mcp_server_from_json(data: Dict[str, Any]) -> McpServer:
    """The typed MCP server of its ACP wire form; ``ValueError`` for a transport this package does
    not know."""
    kind = data.get("type")
    if kind in (None, "stdio"):
        return McpServerStdio(
            data["name"], data["command"], list(data.get("args", [])), _pairs(EnvVariable, data.get("env")), data.get("_meta")
        )
    if kind in ("http", "sse"):
        cls = McpServerHttp if kind == "http" else McpServerSse
        server: McpServer = cls(data["name"], data["url"], _pairs(HttpHeader, data.get("headers")), data.get("_meta"))
        return server
    raise ValueError(f"unknown MCP server transport {kind!r}")


@record
class McpCapabilities:
    """The MCP transports an agent accepts beyond stdio (ACP ``mcpCapabilities``). A session
    request naming a server of another transport is refused (``-32602``) before the host sees it."""

    http: bool = False
    sse: bool = False

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return {"http": self.http, "sse": self.sse}


# ---- system prompts, notices -------------------------------------------------------------------


@record
class SystemPrompt:
    """The client's system prompt for a session (ACP ``SystemPrompt``: ``systemPrompt`` on
    ``session/new``, ``session/load`` or ``session/resume``), given only to an agent that takes it
    (``sessionCapabilities.systemPrompt``).

    ``content`` is its blocks, typed as a prompt's are (text blocks: a client may send no other
    kind yet); ``mode`` says how it applies to the agent's own instructions: ``"append"`` (after
    them) or ``"override"`` (instead of them; another value is a future or custom mode).
    """

    content: List[PromptBlock] = field(default_factory=list)
    mode: str = "append"
    meta: Optional[Meta] = None

    @property
    def text(self) -> str:
        """The text of its text blocks, joined (what applies to the agent's own instructions)."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta({"mode": self.mode, "content": [b.to_json() for b in self.content]}, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "SystemPrompt":
        """Builds one from the ACP wire form."""
        content = [prompt_block_from_json(b) for b in data.get("content", [])]
        return cls(content, str(data.get("mode", "append")), data.get("_meta"))


class NoticeSeverity(str, Enum):
    """How a notice is presented (ACP ``NoticeSeverity``)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


# ---- plans, costs, commands -------------------------------------------------------------------


class PlanEntryPriority(str, Enum):
    """How important a plan entry is."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class PlanEntryStatus(str, Enum):
    """Where a plan entry stands."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


@record
class PlanEntry:
    """One task of a plan."""

    content: str
    priority: PlanEntryPriority = PlanEntryPriority.MEDIUM
    status: PlanEntryStatus = PlanEntryStatus.PENDING
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out = {"content": self.content, "priority": PlanEntryPriority(self.priority).value, "status": PlanEntryStatus(self.status).value}
        return _with_meta(out, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "PlanEntry":
        """Builds one from the ACP wire form."""
        return cls(data["content"], PlanEntryPriority(data["priority"]), PlanEntryStatus(data["status"]), data.get("_meta"))


@record
class Plan:
    """An agent's plan (ACP ``Plan``): every entry with its current status. Each plan sent replaces
    the one before at the client, so send it whole as entries progress."""

    entries: List[PlanEntry] = field(default_factory=list)
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta({"entries": [e.to_json() for e in self.entries]}, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Plan":
        """Builds one from the ACP wire form."""
        return cls([PlanEntry.from_json(e) for e in data.get("entries", [])], data.get("_meta"))


@record
class Cost:
    """A session's cumulative cost (ACP ``Cost``): ``amount`` in ``currency`` (ISO 4217, e.g.
    ``"USD"``), sent with a usage report as ``usage_update.cost``."""

    amount: float
    currency: str
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta({"amount": self.amount, "currency": self.currency}, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Cost":
        """Builds one from the ACP wire form."""
        return cls(float(data["amount"]), str(data["currency"]), data.get("_meta"))


@record
class AvailableCommand:
    """A host-defined slash command (ACP ``AvailableCommand``), advertised beside ``compact`` in
    ``available_commands_update``; ``input_hint`` is shown while the user has typed no input."""

    name: str
    description: str
    input_hint: Optional[str] = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        out: Dict[str, Any] = {"name": self.name, "description": self.description}
        if self.input_hint is not None:
            out["input"] = {"hint": self.input_hint}
        return _with_meta(out, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "AvailableCommand":
        """Builds one from the ACP wire form."""
        hint = (data.get("input") or {}).get("hint")
        return cls(data["name"], data.get("description", ""), hint, data.get("_meta"))


# ---- tool calls -------------------------------------------------------------------------------


@record
class Diff:
    """A change a tool call proposes to the file at ``path`` (absolute): ``old_text`` ``None`` for a
    new file (ACP ``Diff``, tool call content ``{"type": "diff"}``)."""

    if TYPE_CHECKING:
        type: ClassVar[str]
    type = "diff"
    path: str
    new_text: str
    old_text: Optional[str] = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form, as tool call content."""
        out: Dict[str, Any] = {"type": self.type, "path": self.path, "oldText": self.old_text, "newText": self.new_text}
        return _with_meta(out, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Diff":
        """Builds one from the ACP wire form."""
        return cls(data["path"], data["newText"], data.get("oldText"), data.get("_meta"))


@record
class TerminalContent:
    """A terminal the client runs (created with ``terminal/create``), shown live in a tool call
    (ACP ``Terminal``, tool call content ``{"type": "terminal"}``)."""

    if TYPE_CHECKING:
        type: ClassVar[str]
    type = "terminal"
    terminal_id: str
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form, as tool call content."""
        return _with_meta({"type": self.type, "terminalId": self.terminal_id}, self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "TerminalContent":
        """Builds one from the ACP wire form."""
        return cls(data["terminalId"], data.get("_meta"))


@record
class ToolCallLocation:
    """A file a tool call works on (absolute ``path``), and optionally a 1-based ``line``; the client
    can follow along."""

    path: str
    line: Optional[int] = None
    meta: Optional[Meta] = None

    def to_json(self) -> Dict[str, Any]:
        """The ACP wire form."""
        return _with_meta(_optional({"path": self.path}, line=self.line), self.meta)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ToolCallLocation":
        """Builds one from the ACP wire form."""
        return cls(data["path"], data.get("line"), data.get("_meta"))


if TYPE_CHECKING:
    ToolCallContent = Union[PromptBlock, Diff, TerminalContent, str, Dict[str, Any]]
    """An item of a tool call's content: a content block (typed, or its wire form), a :class:`Diff`, a
    :class:`TerminalContent`, a ``str`` (a text block), or the ACP wire form of any of them
    (``{"type": "content" | "diff" | "terminal", ...}``)."""

_TOOL_CONTENT_TYPES = ("content", "diff", "terminal")


def tool_content_json(item: ToolCallContent) -> Dict[str, Any]:
    """The ACP wire form of one item of a tool call's content (``ToolCallContent``): a content block
    is wrapped as ``{"type": "content", "content": block}``."""
    if isinstance(item, str):
        return {"type": "content", "content": {"type": "text", "text": item}}
    if isinstance(item, (Diff, TerminalContent)):
        return item.to_json()
    if isinstance(item, dict):
        if item.get("type") in _TOOL_CONTENT_TYPES:
            return dict(item)
        return {"type": "content", "content": dict(item)}
    return {"type": "content", "content": item.to_json()}


if not TYPE_CHECKING:

    def _make_aliases() -> Dict[str, Any]:
        from typing import Any, Dict, Union

        prompt_block = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]
        return {
            "Meta": Dict[str, Any],
            "PromptBlock": prompt_block,
            "McpServer": Union[McpServerStdio, McpServerHttp, McpServerSse],
            "ToolCallContent": Union[prompt_block, Diff, TerminalContent, str, Dict[str, Any]],
        }

    __getattr__ = _hints.aliases(
        __name__, ("Meta", "PromptBlock", "McpServer", "ToolCallContent"), _make_aliases
    )
