"""Where the model-backed example agents are (``docs/calling-a-real-model-*.md``). Nothing is built
here: the Rust one is built by ``cargo test --workspace`` (or ``cargo build -p
acp-facade-model-agent``), the Python one needs ``httpx`` (bindings-python/requirements-test.txt)
beside the binding, the Node one the built addon.

As in the conformance suite, a missing agent's tests are skipped, or fail when it is named in
``ACP_CONFORMANCE_REQUIRE`` (scripts/test requires all three).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import List

from conformance.agents import ROOT, Agent, Located

RUST_BINARY = "acp-facade-model-agent"


def _rust() -> Located:
    override = os.environ.get("ACP_MODEL_AGENT_RUST_BIN")
    if override:
        return (override,) if os.access(override, os.X_OK) else f"ACP_MODEL_AGENT_RUST_BIN={override} is not executable"
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    target = target if target.is_absolute() else ROOT / target
    built = [p for p in (target / "debug" / RUST_BINARY, target / "release" / RUST_BINARY) if os.access(p, os.X_OK)]
    if not built:
        return f"target/{{debug,release}}/{RUST_BINARY} not built (cargo build -p {RUST_BINARY})"
    return (str(max(built, key=lambda p: p.stat().st_mtime)),)


def _python() -> Located:
    script = ROOT / "examples" / "python" / "model_agent.py"
    if importlib.util.find_spec("httpx") is None:
        return f"httpx is not installed in {sys.executable} (pip install -r bindings-python/requirements-test.txt)"
    if importlib.util.find_spec("acp_facade") is None:
        return f"the acp_facade package is not installed in {sys.executable}"
    return (sys.executable, str(script))


def _node() -> Located:
    script = ROOT / "examples" / "node" / "model_agent.mjs"
    if not list((ROOT / "bindings-node" / "generated").glob("*.node")):
        return "the Node addon is not built (bindings-node/generated/*.node; npm install at the root)"
    node = shutil.which("node")
    if node is None:
        return "node is not on PATH"
    return (node, str(script))


def locate() -> List[Agent]:
    """The three model agents, available or not (``ACP_CONFORMANCE_AGENTS`` restricts them)."""
    only = {n.strip() for n in os.environ.get("ACP_CONFORMANCE_AGENTS", "").split(",") if n.strip()}
    agents = []
    for name, find in (("rust", _rust), ("python", _python), ("node", _node)):
        if only and name not in only:
            continue
        found = find()
        agents.append(Agent(name, None, found) if isinstance(found, str) else Agent(name, found))
    return agents
