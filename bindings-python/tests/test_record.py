"""``acp_facade._record.record``: the package's dataclasses share one ``__eq__``/``__repr__``/
``__hash__`` (cheaper to import than the generated ones) and behave exactly as
``dataclasses.dataclass`` would."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import threading
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
    # (acp_facade.acp's wire types are no records: generated plain classes, scripts/generate-wire.)
    assert seen >= 45, seen


# ---- made at first use (acp_facade._record's module doc) ------------------------------------------

# Describes every record of the package as a fresh interpreter sees it, the class used first in
# one of two ways: by creating an instance (the `__init__` step alone, for a mutable record) or by
# asking for its fields (`dataclass` itself).
_DESCRIBE = """
import dataclasses, importlib, inspect, json, pkgutil, sys
import acp_facade

first = sys.argv[1]
records = []
for info in pkgutil.iter_modules(acp_facade.__path__):
    if info.name != "demo":
        module = importlib.import_module("acp_facade." + info.name)
        records += [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
                    and "__dataclass_fields__" in vars(v)]
out = {}
for cls in records:
    if first == "instance":
        # `inspect.signature` looks `__init__` up, as creating an instance does first.
        signature = inspect.signature(cls)
        args = ["v-" + name for name, p in signature.parameters.items() if p.default is p.empty]
        one, two = cls(*args), cls(*args)
        made_by_instance = not isinstance(vars(cls)["__dataclass_fields__"], dict)
    else:
        made_by_instance = False
    fields = dataclasses.fields(cls)
    args = ["v-" + f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if first != "instance":
        one, two = cls(*args), cls(*args)
    factories = {f.name for f in fields if f.default_factory is not dataclasses.MISSING}
    out[cls.__qualname__] = {
        "signature": str(inspect.signature(cls)),
        "annotations": repr(cls.__init__.__annotations__),
        "qualname": cls.__init__.__qualname__,
        "match_args": list(cls.__match_args__),
        "params": repr(cls.__dataclass_params__),
        # (What a default factory made, by type: `Event`'s ids count up.)
        "instance": repr({k: type(v).__name__ if k in factories else v for k, v in vars(one).items()}),
        "fresh_defaults": [f.name for f in fields if getattr(one, f.name) is getattr(two, f.name)
                           and f.default_factory is not dataclasses.MISSING],
        "class_defaults": {f.name: repr(getattr(cls, f.name, "<absent>")) for f in fields},
        "doc": cls.__doc__,
        "frozen": cls.__dataclass_params__.frozen,
        "made_by_instance": made_by_instance,
    }
print(json.dumps(out))
"""


def _describe(first: str) -> Dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _DESCRIBE, first], capture_output=True, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _twin(cls: type) -> Dict[str, Any]:
    """What ``dataclasses.dataclass`` makes of the fields that it read from ``cls``."""
    fields = dataclasses.fields(cls)
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    twin = dataclasses.make_dataclass(
        cls.__name__,
        [
            (
                f.name,
                f.type,
                dataclasses.field(default=f.default, default_factory=f.default_factory, repr=f.repr, compare=f.compare),  # type: ignore[call-overload]
            )
            for f in fields
        ],
        eq=False,
        repr=False,
        frozen=params.frozen,
    )
    twin.__qualname__ = cls.__qualname__
    args = ["v-" + f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    one = twin(*args)
    factories = {f.name for f in fields if f.default_factory is not dataclasses.MISSING}
    return {
        "signature": str(inspect.signature(twin)),
        "annotations": repr(vars(twin)["__init__"].__annotations__),
        "match_args": list(vars(twin)["__match_args__"]),
        "params": repr(vars(twin)["__dataclass_params__"]),
        "instance": repr({k: type(v).__name__ if k in factories else v for k, v in vars(one).items()}),
    }


def test_every_record_is_the_dataclass_it_would_have_been() -> None:
    by_instance, by_fields = _describe("instance"), _describe("fields")
    # Creating instances of a mutable record does not make it with `dataclass`; a frozen one is.
    assert all(d.pop("made_by_instance") != d["frozen"] for d in by_instance.values()), by_instance
    assert not any(d.pop("made_by_instance") for d in by_fields.values())
    assert by_instance == by_fields
    assert len(by_instance) >= 45  # the package's records, beside acp_facade.acp's plain classes
    records = {}
    for info in pkgutil.iter_modules(acp_facade.__path__):
        if info.name != "demo":
            module = importlib.import_module(f"acp_facade.{info.name}")
            records.update({v.__qualname__: v for v in vars(module).values() if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == module.__name__})
    assert set(records) == set(by_instance)
    for name, described in by_instance.items():
        twin = _twin(records[name])
        assert {k: described[k] for k in twin} == twin, name
        assert described["qualname"] == f"{name}.__init__"
        assert described["fresh_defaults"] == [], name
        assert described["doc"], name
        for field_ in dataclasses.fields(records[name]):
            if field_.default_factory is not dataclasses.MISSING:
                assert described["class_defaults"][field_.name] == repr("<absent>"), (name, field_.name)
            elif field_.default is not dataclasses.MISSING:
                assert described["class_defaults"][field_.name] == repr(field_.default), (name, field_.name)


def _lazy_classes() -> Any:
    """Fresh records (each test its own, made at first use: they have docstrings)."""
    from acp_facade._record import field as lazy_field

    @record
    class Base:
        """A mutable record."""

        name: str
        size: int = 0
        tags: List[str] = lazy_field(default_factory=list)
        note: Optional[str] = lazy_field(default=None, compare=False)

    @record
    class Derived(Base):
        """A record deriving from one."""

        extra: int = 1

    @record(frozen=True)
    class Frozen:
        """A frozen record."""

        name: str
        meta: Optional[str] = lazy_field(default=None, compare=False)

    return Base, Derived, Frozen


def test_a_record_is_made_at_its_first_use() -> None:
    Base, Derived, Frozen = _lazy_classes()
    for cls in (Base, Derived, Frozen):
        assert not isinstance(vars(cls)["__dataclass_fields__"], dict)
    # Creating instances of a mutable record writes its `__init__` only (comparing them is the
    # shared `__eq__`, which asks for the fields).
    made = Derived("a", 2, extra=3), Derived("a", 2, [], "n", 3)
    assert Derived.__match_args__ == ("name", "size", "tags", "note", "extra")
    assert not isinstance(vars(Derived)["__dataclass_fields__"], dict)
    assert made[0] == made[1]
    # A field's class attribute makes it, as `dataclass` leaves it.
    assert Base.note is None and Base.size == 0
    assert isinstance(vars(Base)["__dataclass_fields__"], dict)
    with pytest.raises(AttributeError):
        Base.tags  # noqa: B018 - a default factory leaves no class attribute
    assert repr(Derived("a")).endswith(".Derived(name='a', size=0, tags=[], note=None, extra=1)")
    assert [f.name for f in dataclasses.fields(Derived)] == ["name", "size", "tags", "note", "extra"]
    assert Derived("a").tags is not Derived("a").tags
    # A frozen record is made by its first instance.
    frozen = Frozen("a", "x")
    assert isinstance(vars(Frozen)["__dataclass_fields__"], dict)
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.name = "b"
    assert hash(frozen) == hash(Frozen("a", "y")) and frozen == Frozen("a", "y")
    assert dataclasses.replace(frozen, name="b") == Frozen("b")
    assert copy.deepcopy(Derived("a", tags=["t"])) == Derived("a", tags=["t"])


def test_a_plain_subclass_of_a_record_made_at_first_use() -> None:
    Base, _, _ = _lazy_classes()

    class Plain(Base):  # type: ignore[misc, valid-type]
        def shout(self) -> str:
            return str(self.name).upper()

    assert Plain("a").shout() == "A" and repr(Plain("b", 2)).endswith(".Plain(name='b', size=2, tags=[], note=None)")
    assert str(inspect.signature(Plain)) == str(inspect.signature(Base))


def test_a_class_it_does_not_cover_is_made_at_once() -> None:
    # No docstring: `dataclass` writes one from the signature at once.
    assert isinstance(vars(PlainRecord)["__dataclass_fields__"], dict)
    assert PlainRecord.__doc__ == PlainDC.__doc__.replace("PlainDC", "PlainRecord")  # type: ignore[union-attr]


@pytest.mark.parametrize("first", ["create", "fields", "mixed"])
def test_threads_using_a_record_first_all_see_it_made(first: str) -> None:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can, inside each step too
    try:
        _race(first)
    finally:
        sys.setswitchinterval(interval)


def _race(first: str) -> None:
    for _ in range(20):
        Base, Derived, Frozen = _lazy_classes()
        threads = 8
        barrier = threading.Barrier(threads)
        results: List[Any] = []
        errors: List[BaseException] = []

        def use(i: int) -> None:
            try:
                barrier.wait()
                if first == "create" or (first == "mixed" and i % 2):
                    results.append((repr(Derived("a", i)), repr(Frozen(str(i)))))
                else:
                    results.append((len(dataclasses.fields(Derived)), Frozen.__match_args__))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        workers = [threading.Thread(target=use, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert errors == [] and len(results) == threads


def test_what_dataclass_refuses_is_refused_at_once() -> None:
    from acp_facade._record import field as lazy_field

    with pytest.raises(ValueError, match="mutable default"):

        @record
        class MutableDefault:
            """Refused: a list default."""

            items: List[str] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument"):

        @record
        class Order:
            """Refused: a field without a default after one with."""

            a: int = 0
            b: int

    with pytest.raises(TypeError, match="no type annotation"):

        @record
        class Unannotated:
            """Refused: a field() without an annotation."""

            a = lazy_field(default=0)
