"""``record``: :func:`dataclasses.dataclass` with one shared ``__eq__``, ``__repr__`` and
``__hash__`` instead of new ones generated for every class.

The package defines about sixty dataclasses, and Python (before 3.13) compiles each generated
method on its own: at import, ``__eq__`` and ``__repr__`` cost as much as every ``__init__``
together, about 5 ms of an agent's start-up. The shared methods behave as the generated ones do —
equal when the classes are the same and the fields compared (``field(compare=...)``) are equal as a
tuple; the fields shown (``field(repr=...)``) in declaration order; a frozen record hashed by its
compared fields, a mutable one unhashable — and a class's own methods take precedence, as with
``dataclass``. What they do not have is the generated ``__repr__``'s guard against a record that
contains itself; these records hold wire values, which never do. A type checker sees
``dataclasses.dataclass`` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Tuple, TypeVar

__all__ = ["record"]

if TYPE_CHECKING:
    from dataclasses import dataclass as record
else:
    from dataclasses import dataclass, fields

    _T = TypeVar("_T", bound=type)

    def _compared(obj: Any) -> Tuple[Any, ...]:
        return tuple(getattr(obj, f.name) for f in fields(obj) if f.compare)

    def _eq(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    def _repr(self: Any) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"{self.__class__.__qualname__}({shown})"

    def _hash(self: Any) -> int:
        return hash(_compared(self))

    def record(cls: Any = None, /, *, frozen: bool = False) -> Any:
        """``@record`` or ``@record(frozen=True)``: see the module doc."""

        def wrap(cls: _T) -> _T:
            own = cls.__dict__
            # As `dataclass` decides: a `__hash__` written in the class stays; the `None` that
            # Python puts there for a class defining only `__eq__` does not count.
            explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
            defined_eq, defined_repr = "__eq__" in own, "__repr__" in own
            cls = dataclass(cls, eq=False, repr=False, frozen=frozen)
            if not defined_eq:
                cls.__eq__ = _eq
            if not defined_repr:
                cls.__repr__ = _repr
            if not explicit_hash:
                cls.__hash__ = _hash if frozen else None
            return cls

        wrapper: Callable[[Any], Any] = wrap
        return wrapper if cls is None else wrapper(cls)
