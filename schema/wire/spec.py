"""The kinds of entry of the wire table (table.py): what one generated type is made from and what
the bindings add to the schema. The emitters (python.py, typescript.py) read only these and the
schema (schema.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

@dataclass(frozen=True)
class Tag:
    """A class constant naming the variant: Python attribute ``attr`` with ``value``; ``wire`` is
    the key that carries it on the wire (``None``: the variant is the one without a tag)."""

    attr: str
    value: str
    wire: Optional[str]

@dataclass(frozen=True)
class Record:
    """An object definition made a class (Python) and an interface (TypeScript).

    ``fields``: the wire names, in the order of the Python ``__init__`` parameters (``_meta`` is
    the parameter ``meta``; a property left out is no Python field, while TypeScript declares every
    property). ``defaults``: a Python default (an expression; ``[]`` is a
    fresh list) for a property the schema requires. ``lenient``: what ``from_json`` takes for a
    required property that is absent (an expression). ``always``: optional properties
    ``to_json`` writes even when ``None``. ``nested``: a Python field stored one level down on the
    wire, ``python name -> (wire key, inner key)``, its type that of the inner property.
    ``joined_text``: a read-only ``text`` property joining the text of the text blocks of that
    field. ``note``: what the binding adds to the schema's description (both languages: it names
    wire keys, as the TypeScript types spell them). TypeScript lists ``fields`` first, then the
    definition's other properties."""

    definition: str
    python: Optional[str]
    ts: Optional[str]
    fields: Tuple[str, ...]
    tag: Optional[Tag] = None
    defaults: Dict[str, str] = field(default_factory=dict)
    lenient: Dict[str, str] = field(default_factory=dict)
    always: Tuple[str, ...] = ()
    nested: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    joined_text: Optional[str] = None
    note: str = ""

@dataclass(frozen=True)
class StrEnum:
    """A string enum: a ``str`` ``Enum`` (Python; members named by their values, upper case) and a
    union of string literals (TypeScript; ``ts_open`` adds every other string, as the schema's
    open enums allow)."""

    definition: str
    python: Optional[str]
    ts: Optional[str]
    ts_open: bool = False
    note: str = ""

@dataclass(frozen=True)
class Union:
    """A union of records: a type alias in both languages, and in Python a function
    ``from_json`` that builds the member its wire form names (by ``tag``, or for an untagged union
    by the one member whose required keys are present), raising ``ValueError(error + " <tag>")``
    for a tag it does not know. ``members``: the definitions kept, in order. ``untagged``: the
    member of a wire form without the tag."""

    definition: str
    python: Optional[str]
    ts: Optional[str]
    tag: Optional[str]
    members: Tuple[str, ...]
    from_json: Optional[str]
    untagged: Optional[str] = None
    error: str = ""
    note: str = ""

@dataclass(frozen=True)
class ToolContent:
    """ACP ``ToolCallContent`` as the bindings take it: a content block wrapped as the
    ``wrapper`` variant, or one of the ``variants`` (their records by tag); Python also takes a
    ``str`` (a text block) and any of them in wire form (``function`` makes the wire form)."""

    definition: str
    python: str
    ts: str
    wrapper: str
    variants: Tuple[str, ...]
    function: str
    note: str = ""

@dataclass(frozen=True)
class Meta:
    """The type of ``_meta``: a JSON object passed through as is."""

    python: str
    ts: str
    note: str

@dataclass(frozen=True)
class Opaque:
    """A definition neither language spells out: passed through as is (``Any``/``unknown``)."""

    definition: str

Entry = object  # one of the classes above
