"""Reads the pinned ACP JSON schema (schema/v1/schema.json) into the little the wire generator
needs: a definition's description, its properties in the schema's order (wire name, whether
required, description, default, type), the constant values of a string enum, and the branches of
a union. Nothing here knows the bindings; the table (table.py) says what to generate.

A type is one of: ``Prim(name)`` (``string``, ``boolean``, ``integer``, ``number``, ``object``),
``Ref(definition)``, ``Array(item)``, ``Any()`` (no type the schema pins). ``nullable`` is kept
beside it (``"type": [..., "null"]`` or an ``anyOf`` with ``{"type": "null"}``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union


@dataclass(frozen=True)
class Prim:
    name: str


@dataclass(frozen=True)
class Ref:
    definition: str


@dataclass(frozen=True)
class Array:
    item: "Type"


@dataclass(frozen=True)
class AnyType:
    pass


Type = Union[Prim, Ref, Array, AnyType]


@dataclass(frozen=True)
class Property:
    wire: str
    required: bool
    nullable: bool
    type: Type
    description: str
    default: Any  # the schema's `default`, or None


@dataclass(frozen=True)
class Branch:
    """One branch of a union: its tag value (a `const` of the tag property, or None for an
    untagged branch), its title, its definition and its description."""

    tag: Optional[str]
    title: Optional[str]
    definition: Optional[str]
    description: str


class Schema:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.defs: Dict[str, Any] = json.loads(path.read_text())["$defs"]

    def definition(self, name: str) -> Dict[str, Any]:
        try:
            return self.defs[name]  # type: ignore[no-any-return]
        except KeyError:
            raise SystemExit(f"generate-wire: {self.path} has no definition {name!r}") from None

    def description(self, name: str) -> str:
        return str(self.definition(name).get("description", "")).strip()

    def properties(self, name: str) -> List[Property]:
        body = self.definition(name)
        required = set(body.get("required", ()))
        out = []
        for wire, prop in body.get("properties", {}).items():
            kind, nullable = _type(prop)
            out.append(
                Property(wire, wire in required, nullable, kind, str(prop.get("description", "")).strip(), prop.get("default"))
            )
        return out

    def property(self, name: str, wire: str) -> Property:
        for prop in self.properties(name):
            if prop.wire == wire:
                return prop
        raise SystemExit(f"generate-wire: {name} has no property {wire!r} in {self.path}")

    def enum(self, name: str) -> Tuple[List[Tuple[str, str]], bool]:
        """The constants of a string enum with their descriptions, and whether it also admits
        other strings (a branch without a `const`: custom or future values)."""
        body = self.definition(name)
        values, open_ = [], False
        for branch in body.get("oneOf", body.get("anyOf", [])):
            if "const" in branch:
                values.append((str(branch["const"]), str(branch.get("description", "")).strip()))
            else:
                open_ = True
        if not values:
            raise SystemExit(f"generate-wire: {name} is no string enum in {self.path}")
        return values, open_

    def is_enum(self, name: str) -> bool:
        """Whether a definition is a string enum (constants, perhaps with other strings)."""
        branches = self.definition(name).get("oneOf", self.definition(name).get("anyOf", []))
        return bool(branches) and all("const" in b or b.get("type") == "string" for b in branches)

    def object_of(self, kind: Type) -> str:
        """The object definition a reference names (through a union of one branch)."""
        kind = self.resolve(kind)
        if not isinstance(kind, Ref):
            raise SystemExit(f"generate-wire: {kind} names no definition in {self.path}")
        branches = self.branches(kind.definition, None)
        if len(branches) == 1 and branches[0].definition:
            return branches[0].definition
        return kind.definition

    def branches(self, name: str, tag: Optional[str]) -> List[Branch]:
        """The branches of a union (``oneOf``/``anyOf``), each with its ``tag`` constant."""
        body = self.definition(name)
        out = []
        for branch in body.get("oneOf", body.get("anyOf", [])):
            value = branch.get("properties", {}).get(tag, {}).get("const") if tag else None
            refs = [part["$ref"] for part in branch.get("allOf", []) if "$ref" in part]
            if "$ref" in branch:
                refs.append(branch["$ref"])
            definition = refs[0].rsplit("/", 1)[1] if refs else None
            out.append(Branch(value, branch.get("title"), definition, str(branch.get("description", "")).strip()))
        return out

    def resolve(self, kind: Type) -> Type:
        """A reference to a plain alias (`TerminalId`: a string) as what it names; others as is."""
        while isinstance(kind, Ref):
            body = self.definition(kind.definition)
            if set(body) - {"type", "description", "format"} or not isinstance(body.get("type"), str):
                return kind
            kind = Prim(body["type"])
        return kind


def _type(prop: Dict[str, Any]) -> Tuple[Type, bool]:
    """The type of a property's schema, and whether it admits null."""
    if "$ref" in prop:
        return Ref(prop["$ref"].rsplit("/", 1)[1]), False
    refs = [part["$ref"] for part in prop.get("allOf", []) if "$ref" in part]
    if refs:
        return Ref(refs[0].rsplit("/", 1)[1]), False
    if "anyOf" in prop:
        branches = [b for b in prop["anyOf"] if b.get("type") != "null"]
        nullable = len(branches) < len(prop["anyOf"])
        if len(branches) == 1:
            kind, inner = _type(branches[0])
            return kind, nullable or inner
        return AnyType(), nullable
    declared = prop.get("type")
    names = declared if isinstance(declared, list) else [declared] if declared else []
    nullable = "null" in names
    names = [n for n in names if n != "null"]
    if len(names) != 1:
        return AnyType(), nullable
    if names[0] == "array":
        item, _ = _type(prop.get("items", {}))
        return Array(item), nullable
    return Prim(names[0]), nullable
