"""The scenario registry and the execution of one scenario against one agent.

A scenario is an ``async def name(run: Run)`` registered with ``@scenario``: it starts the agent,
drives it, and asserts what docs/DEMO.md and ARCHITECTURE.md promise. Its transcript is then checked against the
transcript-wide rules (``invariants``) and kept, normalised, for the cross-agent comparison.

Every scenario runs over every transport (``remote``: stdio, and Streamable HTTP and WebSocket
through the official TypeScript client), unless it is about stdio itself — bytes or framing the
official client cannot send, stdin's end, stdout — and says so with ``stdio_only="why"``, or
exercises what one transport refuses before the agent sees it (a second ``initialize`` on a
Streamable HTTP connection, …) and says so with ``not_over={"http": "why"}``.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable, Dict, List, Optional

from . import invariants
from .agents import ROOT, Agent
from .normalize import joined, normalise
from .remote import REMOTE, STDIO, NotListening, Transport
from .wire import Run

OUT = ROOT / "target" / "conformance"
"""Where each run leaves its transcripts (raw and normalised), stores and agent stderr."""

EXACT, MULTISET, NONE = "exact", "multiset", "none"


@dataclass(frozen=True)
class Scenario:
    name: str
    body: Callable[[Run], Awaitable[None]]
    compare: str
    why: str
    doc: str
    erase_ids: bool = False
    not_over: Dict[str, str] = field(default_factory=dict)
    """The transports the scenario does not run over, each with the reason."""

    def runs_over(self, transport: str) -> bool:
        return transport not in self.not_over


SCENARIOS: Dict[str, Scenario] = {}


def scenario(
    compare: str = EXACT,
    why: str = "",
    erase_ids: bool = False,
    stdio_only: str = "",
    not_over: Optional[Dict[str, str]] = None,
) -> Callable[[Callable[[Run], Awaitable[None]]], Callable[[Run], Awaitable[None]]]:
    """Registers a scenario. ``compare`` is how the agents' transcripts are compared: ``exact``
    (same messages, same order), ``multiset`` (same messages, order free: the scenario is racy by
    nature, ``why`` says how) or ``none`` (not compared, ``why`` says why). ``erase_ids``: every
    session id and cursor normalises to one placeholder (see ``normalize``). ``stdio_only``: why
    the scenario cannot run over the remote transports (it is about stdio itself); ``not_over``:
    the remote transports it cannot run over, each with the reason."""
    assert compare in (EXACT, MULTISET, NONE)
    assert compare == EXACT or why, "a scenario not compared exactly must say why"
    excluded = {t: stdio_only for t in REMOTE} if stdio_only else dict(not_over or {})
    assert STDIO not in excluded and set(excluded) <= set(REMOTE), excluded
    assert all(excluded.values()), "a transport a scenario does not run over needs a reason"

    def register(body: Callable[[Run], Awaitable[None]]) -> Callable[[Run], Awaitable[None]]:
        name = body.__name__
        assert name not in SCENARIOS, f"scenario {name} registered twice"
        doc = (body.__doc__ or "").strip()
        SCENARIOS[name] = Scenario(name, body, compare, why, doc, erase_ids, excluded)
        return body

    return register


@dataclass
class Outcome:
    """One scenario run against one agent."""

    scenario: str
    agent: str
    transport: str
    lines: List[str]
    failure: Optional[str]
    problems: List[str] = field(default_factory=list)
    seconds: float = 0.0
    directory: Optional[Path] = None

    @property
    def passed(self) -> bool:
        return self.failure is None and not self.problems

    def report(self) -> str:
        parts = []
        if self.failure:
            parts.append(self.failure)
        if self.problems:
            parts.append("transcript rules violated:\n  " + "\n  ".join(self.problems[:40]))
        parts.append(f"transcript and agent stderr: {self.directory}")
        tail = self.lines[-25:]
        parts.append("last transcript lines (normalised):\n" + "\n".join(line[:400] for line in tail))
        return "\n\n".join(parts)


def execute(s: Scenario, agent: Agent, transport: Transport = Transport(STDIO)) -> Outcome:
    """Runs ``s`` against ``agent`` over ``transport``; its files land in
    ``target/conformance/<scenario>/<agent>`` (stdio) or ``.../<agent>-<transport>``."""
    directory = OUT / s.name / (agent.name if transport.name == STDIO else f"{agent.name}-{transport.name}")
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    started = time.monotonic()
    failure: Optional[str] = None

    async def main() -> Run:
        nonlocal failure
        run = Run(agent, directory, transport)
        try:
            await s.body(run)
            await run.finish()
        except NotListening as e:  # the agent cannot serve remotely: its own words suffice
            failure = str(e)
            await run.abort()
        except Exception:  # recorded, the processes killed, reported by the test
            failure = traceback.format_exc()
            await run.abort()
        return run

    run = asyncio.run(main())
    killed = {p.index for p in run.peers if p.exit_code is None or p.exit_code < 0}
    problems = list(run.violations) + invariants.check(run.entries, killed)
    lines = normalise(run.entries, s.erase_ids)
    (directory / "transcript.jsonl").write_text(run.dump())
    (directory / "normalised.txt").write_text(joined(lines))
    return Outcome(s.name, agent.name, transport.name, lines, failure, problems, time.monotonic() - started, directory)
