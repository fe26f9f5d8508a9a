"""``acp_facade.acp``, generated from the schema (``scripts/generate-wire``): the committed module is
what the generator writes, every class's wire form is valid against the schema definition it is
made from, and ``from_json`` reads back what ``to_json`` wrote."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, List, Tuple

import pytest

from acp_facade import acp
from conftest import ROOT, validate_def

# One value of each class, every field set (the schema definition it is made from, the value).
FULL: List[Tuple[str, Any]] = [
    ("TextContent", acp.TextContent("hi", {"audience": ["user"], "priority": 0.5}, {"k": 1})),
    ("ImageContent", acp.ImageContent("aGk=", "image/png", "file:///a.png", None, {"k": 1})),
    ("AudioContent", acp.AudioContent("aGk=", "audio/wav", {"priority": 1.0}, {"k": 1})),
    ("ResourceLink", acp.ResourceLink("file:///a", "a", "A", "the a", "text/plain", 12, None, {"k": 1})),
    ("TextResourceContents", acp.TextResourceContents("file:///a", "text", "text/plain", {"k": 1})),
    ("BlobResourceContents", acp.BlobResourceContents("file:///b", "aGk=", "application/octet-stream", {"k": 1})),
    ("EmbeddedResource", acp.EmbeddedResource(acp.TextResourceContents("file:///a", "t"), None, {"k": 1})),
    ("EmbeddedResource", acp.EmbeddedResource(acp.BlobResourceContents("file:///b", "aGk="))),
    ("PromptCapabilities", acp.PromptCapabilities(True, False, True)),
    ("EnvVariable", acp.EnvVariable("A", "1", {"k": 1})),
    ("HttpHeader", acp.HttpHeader("X-A", "1", {"k": 1})),
    ("McpServerStdio", acp.McpServerStdio("s", "/bin/s", ["-v"], [acp.EnvVariable("A", "1")], {"k": 1})),
    ("McpServerHttp", acp.McpServerHttp("h", "https://h", [acp.HttpHeader("X", "1")], {"k": 1})),
    ("McpServerSse", acp.McpServerSse("e", "https://e", [], {"k": 1})),
    ("McpCapabilities", acp.McpCapabilities(True, True)),
    ("SystemPrompt", acp.SystemPrompt([acp.TextContent("be brief")], "override", {"k": 1})),
    ("PlanEntry", acp.PlanEntry("do", acp.PlanEntryPriority.HIGH, acp.PlanEntryStatus.IN_PROGRESS, {"k": 1})),
    ("Plan", acp.Plan([acp.PlanEntry("do")], {"k": 1})),
    ("Cost", acp.Cost(0.25, "USD", {"k": 1})),
    ("AvailableCommand", acp.AvailableCommand("review", "Reviews", "a path", {"k": 1})),
    ("Diff", acp.Diff("/a", "new", "old", {"k": 1})),
    ("Diff", acp.Diff("/a", "new")),
    ("Terminal", acp.TerminalContent("t1", {"k": 1})),
    ("ToolCallLocation", acp.ToolCallLocation("/a", 3, {"k": 1})),
]


def test_the_committed_wire_types_are_what_the_generator_writes() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate-wire"), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("definition", "value"), FULL, ids=[f"{d}-{i}" for i, (d, _) in enumerate(FULL)])
def test_the_wire_form_is_the_schema_definitions_and_reads_back(definition: str, value: Any) -> None:
    wire = value.to_json()
    validate_def(definition, wire)
    again = type(value).from_json(wire)
    assert again == value and again is not value
    assert again.to_json() == wire
    assert repr(again) == repr(value)


def test_the_classes_are_plain_mutable_values() -> None:
    text = acp.TextContent("hi")
    assert not hasattr(text, "__dict__"), "slots"
    assert type(text).__hash__ is None, "mutable: unhashable, as a dataclass with eq"
    assert text != acp.TextContent("ho") and text == acp.TextContent("hi")
    assert acp.McpServerHttp("s", "u") != acp.McpServerSse("s", "u")
    assert acp.McpServerStdio("s", "c").args is not acp.McpServerStdio("s", "c").args
    match acp.Diff("/a", "new"):
        case acp.Diff(path, new_text):
            assert (path, new_text) == ("/a", "new")
        case _:
            raise AssertionError("__match_args__")


def test_the_unions_read_their_members_by_tag() -> None:
    for block in (value for definition, value in FULL if definition in ("TextContent", "ImageContent", "EmbeddedResource")):
        validate_def("ContentBlock", block.to_json())
        assert acp.prompt_block_from_json(block.to_json()) == block
    for server in (value for definition, value in FULL if definition.startswith("McpServer")):
        validate_def("McpServer", server.to_json())
        assert acp.mcp_server_from_json(server.to_json()) == server
    assert acp.mcp_server_from_json({"type": "stdio", "name": "s", "command": "c"}) == acp.McpServerStdio("s", "c")
    with pytest.raises(ValueError, match="unknown content block type 'video'"):
        acp.prompt_block_from_json({"type": "video"})
    with pytest.raises(ValueError, match="unknown MCP server transport 'ws'"):
        acp.mcp_server_from_json({"type": "ws", "name": "w"})
    for item in ("hi", acp.TextContent("hi"), acp.Diff("/a", "n"), acp.TerminalContent("t"), {"type": "text", "text": "x"}):
        validate_def("ToolCallContent", acp.tool_content_json(item))
    # Every variant the schema defines passes through in wire form, also one with no class here.
    session = {"type": "session", "sessionId": "child-1"}
    assert acp.tool_content_json(session) == session
    validate_def("ToolCallContent", session)
