"""The asyncio half of the bridge (``acp_facade._bridge.Dispatcher``), with the native answers
recorded: a host call is answered from its own task in the step that finishes it (not from a done
callback one loop iteration later), and a call cancelled before its task's first step is answered
``cancelled`` at once, its host coroutine closed without running and without a "never awaited"
warning."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any, List, Tuple

import pytest

from acp_facade import _bridge


class Recorder:
    """Stands in for the native answers (``bridge_reply`` and friends)."""

    def __init__(self) -> None:
        self.answers: List[Tuple[str, int, Any]] = []

    def bridge_reply(self, call_id: int, value: Any) -> None:
        self.answers.append(("reply", call_id, value))

    def bridge_reply_error(self, call_id: int, error: Any) -> None:
        self.answers.append(("error", call_id, error))

    def bridge_reply_cancelled(self, call_id: int) -> None:
        self.answers.append(("cancelled", call_id, None))

    def bridge_fail_pending(self) -> int:
        return 0

    def bridge_fileno(self) -> int:
        return -1


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(_bridge, "_native", recorder)
    return recorder


def _attached(loop: asyncio.AbstractEventLoop) -> _bridge.Dispatcher:
    import inspect

    dispatcher = _bridge.Dispatcher()
    # attach() without watching the (recorded) bridge's socket.
    dispatcher._asyncio = asyncio
    dispatcher._isawaitable = inspect.isawaitable
    dispatcher._getcoroutinestate = inspect.getcoroutinestate
    dispatcher._loop = loop
    return dispatcher


def test_the_answer_comes_before_callbacks_the_host_scheduled(recorder: Recorder) -> None:
    # A done callback would answer a loop iteration later, after the host's own callback.
    events: List[str] = []

    class Host:
        async def work(self) -> str:
            asyncio.get_running_loop().call_soon(lambda: events.append(f"soon after {len(recorder.answers)} answers"))
            return "done"

    async def main() -> None:
        dispatcher = _attached(asyncio.get_running_loop())
        dispatcher._start(1, Host(), "work", ())
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(main())
    assert recorder.answers == [("reply", 1, "done")]
    assert events == ["soon after 1 answers"]


def test_errors_and_cancellation_are_answered(recorder: Recorder) -> None:
    class Host:
        def __init__(self) -> None:
            self.started = asyncio.Event()

        async def fail(self) -> None:
            raise ValueError("no")

        async def wait(self) -> None:
            self.started.set()
            await asyncio.sleep(3600)

    async def main() -> None:
        dispatcher = _attached(asyncio.get_running_loop())
        host = Host()
        dispatcher._start(1, host, "fail", ())
        dispatcher._start(2, host, "wait", ())
        await host.started.wait()
        dispatcher._cancel(2, dispatcher._tasks[2])
        for _ in range(5):
            await asyncio.sleep(0)
        assert dispatcher._tasks == {}

    asyncio.run(main())
    kinds = sorted((kind, call_id) for kind, call_id, _ in recorder.answers)
    assert kinds == [("cancelled", 2), ("error", 1)]
    error = next(value for kind, _, value in recorder.answers if kind == "error")
    assert isinstance(error, ValueError)


def test_a_call_cancelled_before_its_first_step_is_answered_and_never_runs(recorder: Recorder) -> None:
    ran: List[str] = []

    class Host:
        async def work(self) -> None:
            ran.append("work")

    async def main() -> None:
        dispatcher = _attached(asyncio.get_running_loop())
        # The call and its cancellation in one drain: the task has not taken a step yet.
        dispatcher._start(3, Host(), "work", ())
        dispatcher._cancel(3, dispatcher._tasks[3])
        assert recorder.answers == [("cancelled", 3, None)]
        assert dispatcher._tasks == {}
        for _ in range(5):
            await asyncio.sleep(0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert ran == []
    assert recorder.answers == [("cancelled", 3, None)]
    assert not [w for w in caught if "never awaited" in str(w.message)], [str(w.message) for w in caught]
