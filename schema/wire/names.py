"""Names and text shared by the emitters: Python names of wire keys, and doc text from the
schema's descriptions."""

from __future__ import annotations

import re


def snake(wire: str) -> str:
    """The Python name of a wire key: ``mimeType`` -> ``mime_type``; ``_meta`` -> ``meta``."""
    if wire == "_meta":
        return "meta"
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", wire).lower()


def member(value: str) -> str:
    """The Python enum member named for a value: ``in_progress`` -> ``IN_PROGRESS``."""
    return re.sub(r"\W", "_", value).upper()


def paragraphs(*parts: str) -> str:
    """Non-empty parts, a blank line between them."""
    return "\n\n".join(part.strip() for part in parts if part and part.strip())
