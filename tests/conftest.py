"""The cross-language conformance suite: every scenario against every demo agent (Rust, Python,
Node) over every transport (stdio; Streamable HTTP and WebSocket through the official TypeScript
client's remote streams, ``conformance.remote``), then the normalised transcripts compared: across
languages over stdio, and each remote transport's with the same agent's stdio one.

Nothing is built here. The agents are located by ``conformance.agents`` (``AGENTS`` lists them):
the Rust binary target/{debug,release}/acp-facade-demo, the Python host run by target/py-venv's
python, the Node host when its addon is built. A missing agent's tests are skipped, or fail when
it is named in ``ACP_CONFORMANCE_REQUIRE`` (scripts/test requires all three). A transport whose
prerequisites are missing (Node, the relay's ``npm ci``) likewise: skipped, or failed when named in
``ACP_CONFORMANCE_REQUIRE_TRANSPORTS``.

Each scenario runs once per agent and transport; the run is cached for the session, so the
comparison tests reuse it (and run it themselves when selected alone). Transcripts land in
target/conformance/.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

import scenarios  # noqa: F401  (registers every scenario)
from conformance import remote
from conformance.agents import Agent, locate, required
from conformance.scenario import SCENARIOS, Outcome, execute

AGENTS: List[Agent] = locate()
TRANSPORTS: List[remote.Transport] = remote.locate()


class Outcomes:
    """Each (scenario, agent, transport) run once per test session."""

    def __init__(self) -> None:
        self.done: Dict[Tuple[str, str, str], Outcome] = {}
        self.differences: Dict[str, List[str]] = {}

    def get(self, scenario: str, agent: Agent, transport: remote.Transport = remote.Transport(remote.STDIO)) -> Outcome:
        key = (scenario, agent.name, transport.name)
        if key not in self.done:
            self.done[key] = execute(SCENARIOS[scenario], agent, transport)
        return self.done[key]


_OUTCOMES = Outcomes()


@pytest.fixture(scope="session")
def outcomes() -> Outcomes:
    return _OUTCOMES


def usable(agent: Agent) -> None:
    """Skips (or fails, when required) a test of an agent that is not available."""
    if agent.available:
        return
    if agent.name in required():
        pytest.fail(f"the {agent.name} demo agent is required but not available: {agent.missing}", pytrace=False)
    pytest.skip(f"{agent.name} demo agent not available: {agent.missing}")


def reachable(transport: remote.Transport) -> None:
    """Skips (or fails, when required) a test over a transport that cannot run here."""
    if transport.available:
        return
    if transport.name in remote.required():
        pytest.fail(f"the {transport.name} transport is required but cannot run: {transport.missing}", pytrace=False)
    pytest.skip(f"{transport.name} transport not available: {transport.missing}")


def pytest_report_header(config: pytest.Config) -> List[str]:
    lines = []
    for agent in AGENTS:
        where = " ".join(agent.command) if agent.command else f"NOT AVAILABLE ({agent.missing})"
        lines.append(f"conformance agent {agent.name}: {where}")
    for transport in TRANSPORTS:
        how = " ".join(transport.relay) if transport.relay else "the agent's own pipes"
        lines.append(
            f"conformance transport {transport.name}: "
            + (how if transport.available else f"NOT AVAILABLE ({transport.missing})")
        )
    lines.append(f"conformance scenarios: {len(SCENARIOS)}")
    for transport in TRANSPORTS:
        left_out = sorted(n for n, s in SCENARIOS.items() if not s.runs_over(transport.name))
        if left_out:
            lines.append(f"  not over {transport.name} ({len(left_out)}, each says why): {', '.join(left_out)}")
    return lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _OUTCOMES.done:
        return
    tr = terminalreporter
    tr.section("conformance: scenarios per agent and transport")
    for agent in AGENTS:
        for transport in TRANSPORTS:
            mine = [o for (s, a, t), o in _OUTCOMES.done.items() if a == agent.name and t == transport.name]
            label = f"{agent.name:7} {transport.name:5}"
            if not mine:
                tr.write_line(f"{label} not run" + (f" ({agent.missing})" if agent.missing else ""))
                continue
            failed = sorted(o.scenario for o in mine if not o.passed)
            seconds = sum(o.seconds for o in mine)
            tr.write_line(
                f"{label} {len(mine) - len(failed)}/{len(mine)} scenarios passed in {seconds:.1f}s"
                + (f"; failed: {', '.join(failed)}" if failed else "")
            )
    if _OUTCOMES.differences:
        tr.write_line("wire differences:")
        for scenario, agents in sorted(_OUTCOMES.differences.items()):
            tr.write_line(f"  {scenario}: {', '.join(agents)} differ from their reference")
