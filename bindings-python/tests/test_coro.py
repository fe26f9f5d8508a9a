"""``acp_facade._coro.iscoroutinefunction`` answers as :func:`inspect.iscoroutinefunction` does,
for everything a host may pass (it skips importing :mod:`inspect` when it can tell alone)."""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any, List

import pytest

from acp_facade._coro import iscoroutinefunction


async def coroutine(x: int = 0) -> int:
    return x


def plain(x: int = 0) -> int:
    return x


async def async_generator() -> Any:
    yield 1


class Host:
    async def method(self) -> None:
        return None

    def sync(self) -> None:
        return None

    @staticmethod
    async def static() -> None:
        return None

    @classmethod
    async def klass(cls) -> None:
        return None

    async def __call__(self) -> None:
        return None

    later = functools.partialmethod(method)
    plain_later = functools.partialmethod(sync)


def _marked() -> Any:
    def marked() -> None:
        return None

    if sys.version_info >= (3, 12):
        return inspect.markcoroutinefunction(marked)
    marked.flag = True  # type: ignore[attr-defined]  # an attribute of its own, all the same
    return marked


def _with_attribute() -> Any:
    async def tagged() -> None:
        return None

    tagged.tag = "x"  # type: ignore[attr-defined]
    return tagged


CANDIDATES: List[Any] = [
    coroutine,
    plain,
    async_generator,
    lambda: None,
    Host.method,
    Host().method,
    Host.sync,
    Host().sync,
    Host.static,
    Host.klass,
    Host().klass,
    Host(),
    Host().later,
    Host().plain_later,
    functools.partial(coroutine, 1),
    functools.partial(plain, 1),
    functools.partial(Host().method),
    functools.partial(functools.partial(coroutine), 1),
    _marked(),
    _with_attribute(),
    print,
    len,
    int,
    Host,
    None,
    42,
    "text",
]


@pytest.mark.parametrize("candidate", CANDIDATES)
def test_answers_as_inspect(candidate: Any) -> None:
    assert iscoroutinefunction(candidate) is inspect.iscoroutinefunction(candidate)
