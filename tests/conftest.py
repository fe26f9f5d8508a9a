"""The cross-language conformance suite: every scenario against every demo agent (Rust, Python,
Node) as a subprocess over stdio, then the agents' normalised transcripts compared.

Nothing is built here. The agents are located by ``conformance.agents`` (``AGENTS`` lists them):
the Rust binary target/{debug,release}/acp-facade-demo, the Python host run by target/py-venv's
python, the Node host when its addon is built. A missing agent's tests are skipped, or fail when
it is named in ``ACP_CONFORMANCE_REQUIRE`` (scripts/test requires all three).

Each scenario runs once per agent; the run is cached for the session, so the comparison tests reuse
it (and run it themselves when selected alone). Transcripts land in target/conformance/.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

import scenarios  # noqa: F401  (registers every scenario)
from conformance.agents import Agent, locate, required
from conformance.scenario import SCENARIOS, Outcome, execute

AGENTS: List[Agent] = locate()


class Outcomes:
    """Each (scenario, agent) run once per test session."""

    def __init__(self) -> None:
        self.done: Dict[Tuple[str, str], Outcome] = {}
        self.differences: Dict[str, List[str]] = {}

    def get(self, scenario: str, agent: Agent) -> Outcome:
        key = (scenario, agent.name)
        if key not in self.done:
            self.done[key] = execute(SCENARIOS[scenario], agent)
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


def pytest_report_header(config: pytest.Config) -> List[str]:
    lines = []
    for agent in AGENTS:
        where = " ".join(agent.command) if agent.command else f"NOT AVAILABLE ({agent.missing})"
        lines.append(f"conformance agent {agent.name}: {where}")
    lines.append(f"conformance scenarios: {len(SCENARIOS)}")
    return lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _OUTCOMES.done:
        return
    tr = terminalreporter
    tr.section("conformance: scenarios per agent")
    for agent in AGENTS:
        mine = [o for (s, a), o in _OUTCOMES.done.items() if a == agent.name]
        if not mine:
            tr.write_line(f"{agent.name:7} not run" + (f" ({agent.missing})" if agent.missing else ""))
            continue
        failed = sorted(o.scenario for o in mine if not o.passed)
        seconds = sum(o.seconds for o in mine)
        tr.write_line(
            f"{agent.name:7} {len(mine) - len(failed)}/{len(mine)} scenarios passed in {seconds:.1f}s"
            + (f"; failed: {', '.join(failed)}" if failed else "")
        )
    if _OUTCOMES.differences:
        tr.write_line("wire differences:")
        for scenario, agents in sorted(_OUTCOMES.differences.items()):
            tr.write_line(f"  {scenario}: {', '.join(agents)} differ from {AGENTS[0].name}")
