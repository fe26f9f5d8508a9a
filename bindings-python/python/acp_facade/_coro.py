"""``iscoroutinefunction``: :func:`inspect.iscoroutinefunction`, without importing :mod:`inspect`
for the answers an agent's start-up asks for.

Building an agent checks, before serving starts, that the host's methods that must be
``async def`` are and those that must not be are not; :mod:`inspect` (with :mod:`ast`, :mod:`dis`
and :mod:`tokenize`) costs about 6 ms of start-up, and the asyncio that serving imports afterwards
brings it anyway. A function whose code is a coroutine's, plain or bound, possibly in a
:class:`functools.partial`, is one for :mod:`inspect` too; a plain or bound function whose code is
not and that has no attributes of its own (where ``inspect.markcoroutinefunction`` and
``functools.partialmethod`` leave theirs) is not. Anything else is left to :mod:`inspect` itself,
so every answer is its answer.
"""

from __future__ import annotations

from functools import partial
from types import FunctionType, MethodType

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["iscoroutinefunction"]

_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE


def iscoroutinefunction(obj: Any) -> bool:
    """:func:`inspect.iscoroutinefunction` (see the module doc)."""
    func = obj
    while isinstance(func, MethodType):
        func = func.__func__
    while isinstance(func, partial):
        func = func.func
    if isinstance(func, FunctionType):
        if func.__code__.co_flags & _CO_COROUTINE:
            return True
        plain = func is obj or (type(obj) is MethodType and obj.__func__ is func)
        if plain and not func.__dict__:
            return False
    import inspect

    return inspect.iscoroutinefunction(obj)
