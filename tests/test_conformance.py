"""Every scenario against every demo agent, then the agents' wire compared.

``test_scenario[<scenario>-<agent>]``: the scenario's own assertions (docs/DEMO.md, ARCHITECTURE.md), every
agent message valid against the generated v1 schema, and the transcript-wide rules.

``test_same_wire[<scenario>]``: the normalised transcripts of every available agent equal the
first agent's (Rust), message for message; a difference fails with a unified diff.
"""

from __future__ import annotations

import pytest

from conftest import AGENTS, Outcomes, usable
from conformance.normalize import difference
from conformance.scenario import MULTISET, NONE, SCENARIOS


@pytest.mark.parametrize("agent", AGENTS, ids=[a.name for a in AGENTS])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(name: str, agent, outcomes: Outcomes) -> None:
    usable(agent)
    outcome = outcomes.get(name, agent)
    if not outcome.passed:
        pytest.fail(f"{name} against the {agent.name} demo agent:\n\n{outcome.report()}", pytrace=False)


# Scenarios whose wire cannot be compared by design (several processes racing, a database restart)
# say so with `compare=NONE` and a reason; they are run and checked per agent above, and simply
# have no comparison here (rather than a skipped one).
@pytest.mark.parametrize("name", [n for n, s in SCENARIOS.items() if s.compare != NONE])
def test_same_wire(name: str, outcomes: Outcomes) -> None:
    s = SCENARIOS[name]
    available = [a for a in AGENTS if a.available]
    if len(available) < 2:
        pytest.skip("fewer than two agents available")
    reference = available[0]
    base = outcomes.get(name, reference)
    reports = []
    for agent in available[1:]:
        other = outcomes.get(name, agent)
        diff = difference(reference.name, base.lines, agent.name, other.lines, multiset=s.compare == MULTISET)
        if diff:
            outcomes.differences.setdefault(name, []).append(agent.name)
            reports.append(
                f"--- the {agent.name} agent's wire differs from the {reference.name} agent's"
                + (" (compared as a multiset)" if s.compare == MULTISET else "")
                + f"\n    ({base.directory}/normalised.txt vs {other.directory}/normalised.txt)\n{diff}"
            )
    if reports:
        pytest.fail(f"{name}: the agents differ on the wire\n\n" + "\n\n".join(reports), pytrace=False)
