"""Where the demo agents are. Nothing is built here: the suite runs what scripts/test (or the
developer) has already built, and says plainly what is missing.

Adding an agent is one entry in ``AGENTS``: a name and a function returning its command line (or
the reason it is not available).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple, Union

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "schema" / "v1" / "schema.json"
"""The ACP v1 schema generated from the agent's wire types (schema/README.md)."""
SCHEMA_V2_PATH = ROOT / "schema" / "v2" / "schema.json"
"""The ACP v2 schema (a preview: nothing speaks it yet)."""

Located = Union[Tuple[str, ...], str]
"""A command line (argv prefix), or the reason the agent is not available."""


@dataclass(frozen=True)
class Agent:
    """One demo agent: ``command`` is the argv prefix its command-line options follow."""

    name: str
    command: Optional[Tuple[str, ...]]
    missing: Optional[str] = None

    @property
    def available(self) -> bool:
        return self.command is not None


def _rust() -> Located:
    override = os.environ.get("ACP_CONFORMANCE_RUST_BIN")
    if override:
        return (override,) if os.access(override, os.X_OK) else f"ACP_CONFORMANCE_RUST_BIN={override} is not executable"
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    target = target if target.is_absolute() else ROOT / target
    candidates = [target / profile / "acp-facade-demo" for profile in ("debug", "release")]
    built = [c for c in candidates if c.is_file() and os.access(c, os.X_OK)]
    if not built:
        return "target/{debug,release}/acp-facade-demo not built (cargo build -p acp-facade-demo)"
    # The most recently built one: a stale profile must not stand in for the current code.
    return (str(max(built, key=lambda p: p.stat().st_mtime)),)


def _python() -> Located:
    script = ROOT / "examples" / "python" / "demo_host.py"
    if not script.is_file():
        return f"{script.relative_to(ROOT)} does not exist"
    venv = ROOT / "target" / "py-venv" / "bin" / "python"
    python = str(venv) if venv.is_file() else sys.executable
    return (python, str(script))


def _node() -> Located:
    script = ROOT / "examples" / "node" / "demo_host.mjs"
    if not script.is_file():
        return f"{script.relative_to(ROOT)} does not exist"
    addons = list((ROOT / "bindings-node" / "generated").glob("*.node"))
    if not addons:
        return "the Node addon is not built (bindings-node/generated/*.node; npm install at the root)"
    node = shutil.which("node")
    if node is None:
        return "node is not on PATH"
    return (node, str(script))


AGENTS: Sequence[Tuple[str, Callable[[], Located]]] = (
    ("rust", _rust),
    ("python", _python),
    ("node", _node),
)
"""Every demo agent, the reference (whose transcript the others are compared with) first."""


def locate() -> List[Agent]:
    """Every agent of ``AGENTS``, available or not. ``ACP_CONFORMANCE_AGENTS=rust,python`` restricts
    the run to the named agents."""
    only = {n.strip() for n in os.environ.get("ACP_CONFORMANCE_AGENTS", "").split(",") if n.strip()}
    agents = []
    for name, find in AGENTS:
        if only and name not in only:
            continue
        found = find()
        if isinstance(found, str):
            agents.append(Agent(name, None, found))
        else:
            agents.append(Agent(name, found))
    return agents


def required() -> List[str]:
    """Agents that must be available (``ACP_CONFORMANCE_REQUIRE=rust,python``): a missing one fails
    the run instead of skipping its tests."""
    return [n.strip() for n in os.environ.get("ACP_CONFORMANCE_REQUIRE", "").split(",") if n.strip()]
