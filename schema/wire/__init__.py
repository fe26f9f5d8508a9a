"""The wire types of the bindings, generated from the pinned ACP schema: `scripts/generate-wire`
writes them (table.py says what; python.py and typescript.py write each language; schema.py reads
the schema). Standard library only."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

from . import table
from .python import PythonWriter
from .schema import Schema
from .typescript import TypeScriptWriter


def generate(root: Path) -> Dict[str, str]:
    """Every generated file's text, by its path relative to ``root`` (the repository)."""
    schema = Schema(root / table.SCHEMA)
    return {
        table.PYTHON_OUT: PythonWriter(schema, table.ENTRIES, table.META).write(),
        table.TS_OUT: TypeScriptWriter(schema, table.ENTRIES, table.META).write(),
    }
