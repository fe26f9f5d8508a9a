"""Extension methods (the Rust ``acp_facade::agent::Extensions``): ``_``-prefixed requests and
notifications a host serves, registered on :class:`acp_facade.Options` and advertised under
``agentCapabilities._meta``; unregistered ones stay ``-32601`` (notifications are ignored).

A request handler is ``async def handler(params) -> result``: ``params`` as the client sent them
(``None`` when absent), the result any JSON value. Raise :class:`acp_facade.AcpError` to answer
with its code; any other exception answers ``-32603``. A notification handler is
``async def handler(params) -> None``; notifications are handled one at a time, in arrival order.
Extension methods are not gated by authentication.
"""

from __future__ import annotations

from . import _hints
from ._coro import iscoroutinefunction

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Awaitable, Callable, List, Mapping, Tuple

__all__ = ["ExtensionMethod", "ExtensionNotification"]

if TYPE_CHECKING:  # the type aliases, made at run time when first used (`__getattr__`, below)
    ExtensionMethod = Callable[[Any], Awaitable[Any]]
    """``async def handler(params) -> result`` for one extension request."""

    ExtensionNotification = Callable[[Any], Awaitable[None]]
    """``async def handler(params) -> None`` for one extension notification."""


class _Handler:
    """Calls one product handler for the core (``call`` for requests, ``notify`` for
    notifications)."""

    __slots__ = ("_f",)

    def __init__(self, handler: Callable[[Any], Awaitable[Any]]) -> None:
        self._f = handler

    async def call(self, params: Any) -> Any:
        return await self._f(params)

    async def notify(self, params: Any) -> None:
        await self._f(params)


def adapted(handlers: Mapping[str, Callable[[Any], Awaitable[Any]]], what: str) -> List[Tuple[str, Any]]:
    """``(name, adapter)`` pairs for the native options; ``TypeError`` unless each handler is an
    ``async def`` function (the names are checked by the core: ``ValueError`` unless they begin
    with ``_``)."""
    pairs: List[Tuple[str, Any]] = []
    for name, handler in handlers.items():
        if not (iscoroutinefunction(handler) or iscoroutinefunction(getattr(handler, "__call__", None))):
            raise TypeError(f"the {what} handler of {name!r} must be an `async def` function")
        pairs.append((str(name), _Handler(handler)))
    return pairs


if not TYPE_CHECKING:

    def _make_aliases() -> Dict[str, Any]:
        from typing import Any, Awaitable, Callable

        return {
            "ExtensionMethod": Callable[[Any], Awaitable[Any]],
            "ExtensionNotification": Callable[[Any], Awaitable[None]],
        }

    __getattr__ = _hints.aliases(__name__, ("ExtensionMethod", "ExtensionNotification"), _make_aliases)
