"""The wire table: which definitions of the pinned ACP schema the bindings' wire types are made
from, their names in each language, and what each binding adds (defaults, leniency, notes).
`scripts/generate-wire` writes bindings-python/python/acp_facade/acp.py and
bindings-node/src/wire.d.ts from it, in this order. The kinds of entry: spec.py."""

from __future__ import annotations

from .spec import Meta, Opaque, Record, StrEnum, Tag, ToolContent, Union

SCHEMA = "schema/v1/schema.json"
PYTHON_OUT = "bindings-python/python/acp_facade/acp.py"
TS_OUT = "bindings-node/src/wire.d.ts"

META = Meta(
    python="Meta",
    ts="Meta",
    note="ACP ``_meta``: extra data attached to a message or value (for example a W3C ``traceparent``), passed through as is.",
)

ENTRIES = [
    Opaque("Annotations"),
    # ---- content blocks
    Record(
        "TextContent", "TextContent", "TextContent", ("text", "annotations", "_meta"),
        tag=Tag("type", "text", "type"), lenient={"text": '""'},
        note="A text block; every agent accepts it in a prompt.",
    ),
    Record(
        "ImageContent", "ImageContent", "ImageContent", ("data", "mimeType", "uri", "annotations", "_meta"),
        tag=Tag("type", "image", "type"),
        note="An image: base64 ``data`` of type ``mimeType``; accepted in a prompt when the agent advertises ``promptCapabilities.image``.",
    ),
    Record(
        "AudioContent", "AudioContent", "AudioContent", ("data", "mimeType", "annotations", "_meta"),
        tag=Tag("type", "audio", "type"),
        note="Audio: base64 ``data`` of type ``mimeType``; accepted in a prompt when the agent advertises ``promptCapabilities.audio``.",
    ),
    Record(
        "ResourceLink", "ResourceLink", "ResourceLink",
        ("uri", "name", "title", "description", "mimeType", "size", "annotations", "_meta"),
        tag=Tag("type", "resource_link", "type"), lenient={"name": '""'},
        note="A link to a resource the agent can read itself; always accepted in a prompt.",
    ),
    Record(
        "TextResourceContents", "TextResourceContents", "TextResourceContents", ("uri", "text", "mimeType", "_meta"),
        note="The text of an embedded resource.",
    ),
    Record(
        "BlobResourceContents", "BlobResourceContents", "BlobResourceContents", ("uri", "blob", "mimeType", "_meta"),
        lenient={"blob": '""'}, note="The binary contents of an embedded resource (base64 ``blob``).",
    ),
    Union(
        "EmbeddedResourceResource", None, None, None, ("TextResourceContents", "BlobResourceContents"),
        "_embedded_resource_resource_from_json", error="unknown embedded resource",
    ),
    Record(
        "EmbeddedResource", "EmbeddedResource", "EmbeddedResource", ("resource", "annotations", "_meta"),
        tag=Tag("type", "resource", "type"),
        note="A resource whose contents the client embedded; accepted in a prompt when the agent advertises ``promptCapabilities.embeddedContext``.",
    ),
    Union(
        "ContentBlock", "PromptBlock", "ContentBlock", "type",
        ("TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource"),
        "prompt_block_from_json", error="unknown content block type",
        note="One block of a prompt or of a tool's output, typed.",
    ),
    Record(
        "PromptCapabilities", "PromptCapabilities", None, ("image", "audio", "embeddedContext"),
        note="The prompt content an agent accepts beyond text and resource links. A prompt with a block it does not advertise is refused (``-32602``) before the host sees it.",
    ),
    # ---- turns and tool calls (TypeScript: Python has its own forms in the harness)
    StrEnum("StopReason", None, "StopReason", note="``undefined`` from ``runTurn`` means ``\"end_turn\"``."),
    StrEnum("ToolKind", None, "ToolKind"),
    StrEnum("ToolCallStatus", None, "ToolCallStatus"),
    StrEnum("PermissionOptionKind", None, None),
    Record(
        "PermissionOption", None, "PermissionOption", ("optionId", "name", "kind", "_meta"),
        note="Offered to the user with a permission request.",
    ),
    Record(
        "SessionConfigSelectOption", None, "SessionConfigSelectOption", ("value", "name", "description", "_meta"),
        note="One value of a select config option.",
    ),
    # ---- MCP servers
    Record(
        "EnvVariable", "EnvVariable", "EnvVariable", ("name", "value", "_meta"),
        note="An environment variable of a stdio MCP server.",
    ),
    Record(
        "HttpHeader", "HttpHeader", "HttpHeader", ("name", "value", "_meta"),
        note="An HTTP header of an http or sse MCP server.",
    ),
    Record(
        "McpServerStdio", "McpServerStdio", "McpServerStdio", ("name", "command", "args", "env", "_meta"),
        tag=Tag("transport", "stdio", None), defaults={"args": "[]", "env": "[]"}, lenient={"args": "[]", "env": "[]"},
        note="An MCP server the agent starts itself: ``command`` with ``args`` and ``env``; every agent accepts these.",
    ),
    Record(
        "McpServerHttp", "McpServerHttp", "McpServerHttp", ("name", "url", "headers", "_meta"),
        tag=Tag("transport", "http", "type"), defaults={"headers": "[]"}, lenient={"headers": "[]"},
        note="An MCP server over HTTP at ``url``; accepted when the agent advertises ``mcpCapabilities.http``.",
    ),
    Record(
        "McpServerSse", "McpServerSse", "McpServerSse", ("name", "url", "headers", "_meta"),
        tag=Tag("transport", "sse", "type"), defaults={"headers": "[]"}, lenient={"headers": "[]"},
        note="An MCP server over server-sent events at ``url``; accepted when the agent advertises ``mcpCapabilities.sse``.",
    ),
    Union(
        "McpServer", "McpServer", "McpServer", "type", ("McpServerStdio", "McpServerHttp", "McpServerSse"),
        "mcp_server_from_json", untagged="McpServerStdio", error="unknown MCP server transport",
        note="An MCP server a client asked a session to use; its ``type`` on the wire (absent: stdio) tells the transport, as ``transport`` does in Python.",
    ),
    Record(
        "McpCapabilities", "McpCapabilities", None, ("http", "sse"),
        note="The MCP transports an agent accepts beyond stdio. A session request naming a server of another transport is refused (``-32602``) before the host sees it.",
    ),
    # ---- system prompts, notices
    Record(
        "SystemPrompt", "SystemPrompt", "SystemPrompt", ("content", "mode", "_meta"),
        defaults={"content": "[]", "mode": '"append"'}, lenient={"content": "[]", "mode": '"append"'},
        joined_text="content",
        note="The client's system prompt for a session (``systemPrompt`` on ``session/new``, ``session/load`` or ``session/resume``), given only to an agent that takes it (``sessionCapabilities.systemPrompt``). ``mode`` ``\"append\"`` puts it after the agent's own instructions, ``\"override\"`` instead of them; another value is a future or custom mode.",
    ),
    StrEnum(
        "NoticeSeverity", "NoticeSeverity", "NoticeSeverity",
        note="How a notice is presented: a turn's notice takes these three (ACP reserves other values, ``_``-prefixed ones for extensions).",
    ),
    # ---- plans, costs, commands
    StrEnum("PlanEntryPriority", "PlanEntryPriority", "PlanEntryPriority", note="How important a plan entry is."),
    StrEnum("PlanEntryStatus", "PlanEntryStatus", "PlanEntryStatus", note="Where a plan entry stands."),
    Record(
        "PlanEntry", "PlanEntry", "PlanEntry", ("content", "priority", "status", "_meta"),
        defaults={"priority": "PlanEntryPriority.MEDIUM", "status": "PlanEntryStatus.PENDING"},
        note="One task of a plan.",
    ),
    Record(
        "Plan", "Plan", "Plan", ("entries", "_meta"), defaults={"entries": "[]"}, lenient={"entries": "[]"},
        note="An agent's plan: every entry with its current status. Each plan sent replaces the one before at the client, so send it whole as entries progress.",
    ),
    Record(
        "Cost", "Cost", "Cost", ("amount", "currency", "_meta"),
        note="A session's cumulative cost, sent with a usage report as ``usage_update.cost``.",
    ),
    Record(
        "AvailableCommand", "AvailableCommand", "AvailableCommand", ("name", "description", "input_hint", "_meta"),
        nested={"input_hint": ("input", "hint")}, lenient={"description": '""'},
        note="A host-defined slash command, advertised beside ``compact`` in ``available_commands_update``; its input hint is shown while the user has typed no input.",
    ),
    # ---- tool calls
    Record(
        "Diff", "Diff", "Diff", ("path", "newText", "oldText", "_meta"), tag=Tag("type", "diff", "type"), always=("oldText",),
        note="A change a tool call proposes to the file at ``path`` (absolute); no old text for a new file.",
    ),
    Record(
        "Terminal", "TerminalContent", "TerminalContent", ("terminalId", "_meta"), tag=Tag("type", "terminal", "type"),
        note="A terminal the client runs (created with ``terminal/create``), shown live in a tool call.",
    ),
    ToolContent(
        "ToolCallContent", "ToolCallContent", "ToolCallContent", "content", ("diff", "terminal"), "tool_content_json",
        note="An item of a tool call's content: a content block (wrapped as ``{\"type\": \"content\", ...}``), a diff or a terminal.",
    ),
    Record(
        "ToolCallLocation", "ToolCallLocation", "ToolCallLocation", ("path", "line", "_meta"),
        note="A file a tool call works on (absolute ``path``), and optionally a 1-based ``line``; the client can follow along.",
    ),
]
