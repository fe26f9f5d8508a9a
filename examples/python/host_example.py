#!/usr/bin/env python3
"""A short ACP agent written against the host interfaces directly (no runner).

Each session echoes the prompt back as one message chunk. The session publishes its own events
(``TurnStarted`` carrying the submitted command id, a ``TokenDelta``, ``TurnDone``) to its
``EventHub``; the Rust core correlates them to the prompt and speaks ACP. ``interrupt`` cancels
the running turn, which then ends with ``TurnInterrupted``. Sessions live in memory only.

usage: host_example.py   (an ACP agent over stdio)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from typing import List, Optional

from acp_facade import (
    Agent,
    ContentBlock,
    Event,
    EventClass,
    EventKind,
    GateResponse,
    LiveSession,
    Options,
    SessionHost,
    Setup,
    TokenDelta,
    TurnDone,
    TurnInterrupted,
    TurnStarted,
    UserMessage,
    plain_text,
)

_ids = itertools.count(1)


class EchoSession(LiveSession):
    """Echoes each prompt; one turn at a time."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self._turns = itertools.count(1)
        self._running: Optional[asyncio.Task[None]] = None

    async def submit(self, prompt: List[ContentBlock]) -> str:
        n = next(self._turns)
        command = f"{self.id}/c{n}"
        self._running = asyncio.create_task(self._turn(command, f"t{n}", prompt))
        return command

    async def _turn(self, command: str, turn_id: str, prompt: List[ContentBlock]) -> None:
        def event(kind: EventKind, durable: bool = False, command_id: Optional[str] = None) -> Event:
            event_class = EventClass.ENDURING if durable else EventClass.EPHEMERAL
            return Event(kind, event_class, command_id=command_id, loop_id="main", turn_id=turn_id)

        await self.events.publish(event(TurnStarted(UserMessage(prompt)), durable=True, command_id=command))
        try:
            await asyncio.sleep(0)  # a real host would call its model here
            await self.events.publish(event(TokenDelta(plain_text(prompt))))
            await self.events.publish(event(TurnDone(), durable=True))
        except asyncio.CancelledError:
            await self.events.publish(event(TurnInterrupted(), durable=True))

    async def interrupt(self) -> None:
        if self._running is not None:
            self._running.cancel()

    async def respond_gate(self, gate_id: str, response: GateResponse) -> None:
        return None


class EchoHost(SessionHost):
    """Creates echo sessions."""

    async def new_session(self, setup: Setup) -> LiveSession:
        return EchoSession(f"echo-{next(_ids)}")


def main() -> None:
    Agent(Options(EchoHost(), agent_name="acp-facade-host-example", agent_version="0.1.0")).run_stdio()


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    main()
