"""Every scenario against every demo agent over every transport, then the wire compared.

``test_scenario[<scenario>-<agent>-<transport>]``: the scenario's own assertions (docs/DEMO.md,
ARCHITECTURE.md), every agent message valid against the generated v1 schema, and the
transcript-wide rules. Transports: ``stdio``, and ``http`` / ``ws`` (the agent started with
``--listen``, driven through the official TypeScript client's remote streams, see
``conformance.remote``); a scenario about stdio itself runs over stdio only, one exercising what
a transport refuses before the agent sees it does not run over that transport (``not_over``).

``test_same_wire[<scenario>]``: over stdio, the normalised transcripts of every available agent
equal the first agent's (Rust), message for message; a difference fails with a unified diff.

``test_same_transport[<scenario>-<agent>-<transport>]``: an agent's normalised transcript over
http or ws equals its own over stdio — and thus, with ``test_same_wire``, every language's over
every transport is the same wire.
"""

from __future__ import annotations

from typing import Any, List

import pytest

from conftest import AGENTS, TRANSPORTS, Outcomes, reachable, usable
from conformance.normalize import difference
from conformance.remote import STDIO
from conformance.scenario import MULTISET, NONE, SCENARIOS


def _runs() -> List[Any]:
    """(scenario, agent, transport) for every scenario, agent and transport it runs over."""
    runs = []
    for name, s in SCENARIOS.items():
        for agent in AGENTS:
            for transport in TRANSPORTS:
                if not s.runs_over(transport.name):
                    continue
                runs.append(pytest.param(name, agent, transport, id=f"{name}-{agent.name}-{transport.name}"))
    return runs


@pytest.mark.parametrize(("name", "agent", "transport"), _runs())
def test_scenario(name: str, agent, transport, outcomes: Outcomes) -> None:
    usable(agent)
    reachable(transport)
    outcome = outcomes.get(name, agent, transport)
    if not outcome.passed:
        pytest.fail(
            f"{name} against the {agent.name} demo agent over {transport.name}:\n\n{outcome.report()}", pytrace=False
        )


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
            outcomes.differences.setdefault(name, []).append(f"{agent.name} (from {reference.name}, over stdio)")
            reports.append(
                f"--- the {agent.name} agent's wire differs from the {reference.name} agent's"
                + (" (compared as a multiset)" if s.compare == MULTISET else "")
                + f"\n    ({base.directory}/normalised.txt vs {other.directory}/normalised.txt)\n{diff}"
            )
    if reports:
        pytest.fail(f"{name}: the agents differ on the wire\n\n" + "\n\n".join(reports), pytrace=False)


def _remote_runs() -> List[Any]:
    """(scenario, agent, transport) for every compared scenario over a remote transport."""
    return [
        pytest.param(name, agent, transport, id=f"{name}-{agent.name}-{transport.name}")
        for name, s in SCENARIOS.items()
        if s.compare != NONE
        for agent in AGENTS
        for transport in TRANSPORTS
        if transport.remote and s.runs_over(transport.name)
    ]


@pytest.mark.parametrize(("name", "agent", "transport"), _remote_runs())
def test_same_transport(name: str, agent, transport, outcomes: Outcomes) -> None:
    usable(agent)
    reachable(transport)
    s = SCENARIOS[name]
    base = outcomes.get(name, agent)
    other = outcomes.get(name, agent, transport)
    if not other.passed:
        pytest.fail(
            f"{name} did not pass against the {agent.name} demo agent over {transport.name} "
            f"(test_scenario[{name}-{agent.name}-{transport.name}] says why)",
            pytrace=False,
        )
    diff = difference(STDIO, base.lines, transport.name, other.lines, multiset=s.compare == MULTISET)
    if diff:
        outcomes.differences.setdefault(name, []).append(f"{agent.name} over {transport.name} (from stdio)")
        pytest.fail(
            f"{name}: the {agent.name} agent's wire over {transport.name} differs from its wire over stdio"
            + (" (compared as a multiset)" if s.compare == MULTISET else "")
            + f"\n    ({base.directory}/normalised.txt vs {other.directory}/normalised.txt)\n{diff}",
            pytrace=False,
        )
