"""A prompt as a live session's ``submit_prompt`` receives it (the Rust ``acp_facade::harness::Prompt``):
its content blocks, typed; the host-defined slash command it invokes, if any; the request's
``_meta``."""

from __future__ import annotations

from ._record import field, record
from .acp import TextContent, prompt_block_from_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional
    from .acp import Meta, PromptBlock

__all__ = ["Prompt", "SlashCommand"]


@record
class SlashCommand:
    """One invocation of a host-defined slash command: a prompt whose first block is the text
    ``/name input`` naming one of the session's advertised commands."""

    name: str
    input: str = ""
    """What follows the name, trimmed; empty when nothing does."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "SlashCommand":
        """Builds one from its JSON form, ``{"name", "input"}``."""
        return cls(str(data["name"]), str(data.get("input", "")))


@record
class Prompt:
    """A ``session/prompt``: ``content`` as the client sent it (checked against the advertised
    prompt capabilities), the ``command`` it invokes (the content still holds the text as typed)
    and the request's ``meta`` (ACP ``_meta``, e.g. a W3C ``traceparent``)."""

    content: List[PromptBlock] = field(default_factory=list)
    command: Optional[SlashCommand] = None
    meta: Optional[Meta] = None

    def text(self) -> str:
        """The prompt's text blocks, concatenated."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Prompt":
        """Builds one from the form the core hands hosts: ``{"content", "command", "meta"}``."""
        command = data.get("command")
        return cls(
            [prompt_block_from_json(b) for b in data.get("content", [])],
            None if command is None else SlashCommand.from_json(command),
            data.get("meta"),
        )
