"""``acp_facade._record.record``: the package's dataclasses share one ``__eq__``/``__repr__``/
``__hash__`` (cheaper to import than the generated ones) and behave exactly as
``dataclasses.dataclass`` would."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pytest

import acp_facade
from acp_facade._record import record


@dataclass
class PlainDC:
    name: str
    size: int = 0
    tags: List[str] = field(default_factory=list)
    note: Optional[str] = field(default=None, compare=False)
    secret: str = field(default="", repr=False)


@record
class PlainRecord:
    name: str
    size: int = 0
    tags: List[str] = field(default_factory=list)
    note: Optional[str] = field(default=None, compare=False)
    secret: str = field(default="", repr=False)


@dataclass(frozen=True)
class FrozenDC:
    name: str
    meta: Optional[str] = field(default=None, compare=False)


@record(frozen=True)
class FrozenRecord:
    name: str
    meta: Optional[str] = field(default=None, compare=False)


@record
class OwnMethods:
    value: int

    def __eq__(self, other: Any) -> bool:
        return True

    def __hash__(self) -> int:
        return 7

    def __repr__(self) -> str:
        return "own"


@record
class Child(PlainRecord):
    extra: int = 1


SAMPLES: List[Dict[str, Any]] = [
    {"name": "a"},
    {"name": "a", "size": 2, "tags": ["x"]},
    {"name": "a", "note": "differs only in an uncompared field"},
    {"name": "a", "secret": "hidden from repr"},
    {"name": "b", "size": 2},
    {"name": "nan", "size": float("nan")},  # type: ignore[dict-item]
]


@pytest.mark.parametrize("left", SAMPLES)
@pytest.mark.parametrize("right", SAMPLES)
def test_eq_matches_dataclass(left: Dict[str, Any], right: Dict[str, Any]) -> None:
    assert (PlainRecord(**left) == PlainRecord(**right)) == (PlainDC(**left) == PlainDC(**right))
    assert (PlainRecord(**left) != PlainRecord(**right)) == (PlainDC(**left) != PlainDC(**right))
    same = PlainRecord(**left)
    assert (same == same) == (PlainDC(**left) == PlainDC(**left))


@pytest.mark.parametrize("sample", SAMPLES)
def test_repr_matches_dataclass(sample: Dict[str, Any]) -> None:
    assert repr(PlainRecord(**sample)) == repr(PlainDC(**sample)).replace("PlainDC", "PlainRecord")


def test_hash_matches_dataclass() -> None:
    assert PlainRecord.__hash__ is None and PlainDC.__hash__ is None
    with pytest.raises(TypeError):
        hash(PlainRecord("a"))
    assert hash(FrozenRecord("a", "x")) == hash(FrozenRecord("a", "y"))
    assert FrozenRecord("a", "x") == FrozenRecord("a", "y") and FrozenDC("a", "x") == FrozenDC("a", "y")
    assert {FrozenRecord("a"), FrozenRecord("a"), FrozenRecord("b")} == {FrozenRecord("a"), FrozenRecord("b")}
    with pytest.raises(dataclasses.FrozenInstanceError):
        FrozenRecord("a").name = "b"  # type: ignore[misc]


def test_other_classes_are_never_equal() -> None:
    assert PlainRecord("a") != Child("a")
    assert Child("a") != PlainRecord("a")
    assert PlainRecord("a") != ("a", 0, [], "")
    assert PlainRecord.__eq__(PlainRecord("a"), "a") is NotImplemented
    assert Child("a", extra=2) != Child("a", extra=3)
    assert repr(Child("a")) == "Child(name='a', size=0, tags=[], note=None, extra=1)"


def test_a_class_keeps_its_own_methods() -> None:
    assert OwnMethods(1) == OwnMethods(2)
    assert hash(OwnMethods(1)) == 7
    assert repr(OwnMethods(1)) == "own"


def test_every_record_of_the_package_uses_record() -> None:
    """No module slips back to the per-class generated methods (each costs start-up)."""
    seen = 0
    for info in pkgutil.iter_modules(acp_facade.__path__):
        if info.name == "demo":
            continue
        module = importlib.import_module(f"acp_facade.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                seen += 1
                params = value.__dataclass_params__  # type: ignore[attr-defined]
                assert not params.eq and not params.repr, f"{value.__qualname__} is a plain dataclass: use record"
                assert "__eq__" in vars(value) and "__repr__" in vars(value), value.__qualname__
    assert seen >= 50, seen
