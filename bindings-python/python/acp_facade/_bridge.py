"""The asyncio half of the bridge between the Rust core and the caller's event loop.

Rust queues calls into Python and wakes the loop through a file descriptor (an eventfd on Linux,
else or with ``ACP_FACADE_NO_EVENTFD=1`` a socket pair: whichever ``bridge_fileno()`` gives) that
the loop watches with ``loop.add_reader``. :class:`Dispatcher` drains the queue on the loop's
thread with one call into Rust, which delivers every item in queue order (and completes the futures
that Rust work resolved itself); it runs each host coroutine in an :class:`asyncio.Task`, and
answers from that task with plain synchronous calls into Rust. Rust
cancels a task (``session/cancel``, a close grace period, a dropped request) by queueing a
``cancel`` item; Rust work that a Python coroutine awaits completes a future registered here.
Nothing here writes to stdout.

:mod:`asyncio` is imported when a loop attaches, not with the package: an agent started by
``Agent.run_stdio`` answers ``initialize`` before asyncio is loaded (it costs about 35 ms). So is
:mod:`inspect` (asyncio imports it anyway). Once it is, the package's annotation names are bound
(:mod:`acp_facade._hints`), so that ``typing.get_type_hints`` reads the package's classes.
"""

from __future__ import annotations

import sys

from . import _hints, _native

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Callable, Generator
    import asyncio
    import logging

__all__ = ["DONE", "Dispatcher", "dispatcher"]


def _log() -> "logging.Logger":
    import logging

    return logging.getLogger("acp_facade")


class _Done:
    """An awaitable that is already complete (the fast path of ``turn.text`` and friends)."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator

    def __repr__(self) -> str:
        return "<done>"


DONE = _Done()


class Dispatcher:
    """Runs the calls Rust queues, on the one asyncio loop that serves."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._users = 0
        self._tasks: dict[int, asyncio.Future[Any]] = {}
        self._futures: dict[int, asyncio.Future[Any]] = {}
        self._next_future = 0
        self._fd = _native.bridge_fileno()
        self._asyncio: Any = None  # the module, once a loop has attached
        self._isawaitable: Any = None  # inspect.isawaitable, imported with asyncio (calls run after)
        self._getcoroutinestate: Any = None  # inspect.getcoroutinestate, likewise

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Starts watching the bridge from ``loop`` (nested serves on the same loop share it)."""
        if self._loop is not None and self._loop is not loop:
            if self._loop.is_closed() or not self._users:
                self._reset()
            else:
                raise RuntimeError("acp_facade is already serving on another event loop")
        if self._users == 0:
            import asyncio
            import inspect

            self._asyncio = asyncio
            self._isawaitable = inspect.isawaitable
            self._getcoroutinestate = inspect.getcoroutinestate
            self._loop = loop
            loop.add_reader(self._fd, self._on_wake)
        self._users += 1
        _hints.bind()  # asyncio has imported typing: `get_type_hints` can read the package (never raises)

    def detach(self) -> None:
        """Stops watching when the last serve on the loop ends; cancels what is left."""
        self._users -= 1
        if self._users > 0:
            return
        self._reset()

    def _reset(self) -> None:
        loop, self._loop = self._loop, None
        self._users = 0
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self._fd)
        for call_id, task in list(self._tasks.items()):
            self._cancel(call_id, task)
        self._tasks.clear()
        for future in self._futures.values():
            if not future.done():
                future.cancel()
        self._futures.clear()
        _native.bridge_fail_pending()

    def future(self) -> tuple[asyncio.Future[Any], int]:
        """A new future that Rust completes by its id."""
        future = self._new_future()
        self._next_future += 1
        self._futures[self._next_future] = future
        return future, self._next_future

    def _new_future(self) -> asyncio.Future[Any]:
        # A future of the loop that serves, once attached: every future is completed from its
        # thread, and `asyncio.get_running_loop()` costs a `getpid` system call on Python 3.11,
        # once per call into Rust. Before any attach, get_running_loop() says what is wrong.
        loop = self._loop
        if loop is None:
            loop = (self._asyncio or __import__("asyncio")).get_running_loop()
        return loop.create_future()

    def wait(self, start: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Calls ``start(*args, future_id)`` and returns the future it completes."""
        future = self._new_future()
        self._next_future = fid = self._next_future + 1
        self._futures[fid] = future
        try:
            start(*args, fid)
        except BaseException:
            del self._futures[fid]
            raise
        return future

    def _on_wake(self) -> None:
        # One call delivers everything queued since the last wake-up, in queue order: calls to
        # `_start`, cancellations to `_cancel_id`, resolved futures straight to `_futures`.
        try:
            failed = _native.bridge_drain(self._futures, self._start, self._cancel_id)
        except Exception:  # pragma: no cover - defensive: never break the loop
            _log().exception("acp_facade: draining the bridge failed")
            return
        if failed:  # pragma: no cover - defensive
            stop = None
            for exc in failed:
                if isinstance(exc, Exception):
                    _log().error("acp_facade: a bridge item failed", exc_info=exc)
                elif stop is None:
                    stop = exc  # KeyboardInterrupt, SystemExit: raised once every other item is delivered
            if stop is not None:
                raise stop

    def _cancel_id(self, call_id: int) -> None:
        """Cancels call ``call_id``'s task, if it still runs."""
        task = self._tasks.get(call_id)
        if task is not None:
            self._cancel(call_id, task)

    def _start(self, call_id: int, target: Any, method: str, args: tuple[Any, ...]) -> None:
        try:
            result = getattr(target, method)(*args)
        except Exception as exc:
            _native.bridge_reply_error(call_id, exc)
            return
        if not self._isawaitable(result):
            _native.bridge_reply(call_id, result)
            return
        self._tasks[call_id] = self._asyncio.ensure_future(self._run(call_id, result), loop=self._loop)

    async def _run(self, call_id: int, awaitable: Any) -> None:
        """Awaits a host call and answers it from its own task, in the step that finishes it.

        Answering from a done callback would cost the loop one more iteration per call (asyncio
        schedules done callbacks with ``call_soon``), and the Rust side would then see a turn's
        operations and its answer a loop iteration apart: two hand-overs instead of one.
        """
        try:
            value = await awaitable
        except BaseException as exc:
            self._tasks.pop(call_id, None)
            if isinstance(exc, self._asyncio.CancelledError):
                _native.bridge_reply_cancelled(call_id)
            else:
                _native.bridge_reply_error(call_id, exc)
            if not isinstance(exc, Exception):
                raise  # the task stays cancelled; KeyboardInterrupt and SystemExit stop the loop
            return
        self._tasks.pop(call_id, None)
        _native.bridge_reply(call_id, value)

    def _cancel(self, call_id: int, task: asyncio.Future[Any]) -> None:
        """Cancels a host call's task; one cancelled before its first step is answered here."""
        coro = task.get_coro()  # type: ignore[attr-defined]
        task.cancel()
        if self._getcoroutinestate(coro) != "CORO_CREATED":
            return  # `_run` answers when the cancellation reaches it
        # `_run` never runs: close the host's coroutine, as cancelling a task that wrapped it
        # directly would have (so it is not reported as never awaited), and answer.
        self._tasks.pop(call_id, None)
        close = getattr(coro.cr_frame.f_locals.get("awaitable"), "close", None)
        if close is not None:
            close()
        _native.bridge_reply_cancelled(call_id)


dispatcher = Dispatcher()
