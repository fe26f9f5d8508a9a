"""The performance mechanisms' switches (docs/internals/): each selects its plain path, so that a
switch cannot silently do nothing. ``ACP_FACADE_NO_EVENTFD=1``: the bridge wakes the loop through
a socket pair, not an eventfd; ``ACP_FACADE_NO_SCHED_BATCH=1``: the core's threads keep the
policy they inherit. Each is checked in a fresh process (a switch is read once per process), and
this process is checked against its own environment (the suite also runs with every switch on)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from acp_facade import _native
from conftest import DEMO

SWITCHES = ("ACP_FACADE_NO_EVENTFD", "ACP_FACADE_NO_SCHED_BATCH", "ACP_FACADE_NO_UV_RELAY")

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="eventfd and SCHED_BATCH are Linux's")

# Serves the demo until its stdin (/dev/null) ends, which starts the core's runtime, then reports
# what the bridge's descriptor is and the scheduling policy of every thread, by name.
_PROBE = """
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
sys.argv = [sys.argv[1], "--store", ":memory:"]
import demo_host
from acp_facade import _native
wake = os.readlink(f"/proc/self/fd/{_native.bridge_fileno()}")
status = demo_host.main()
threads = []
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as comm:
        threads.append([comm.read().strip(), os.sched_getscheduler(int(tid)), int(tid) == os.getpid()])
sys.stderr.write(json.dumps({"status": status, "wake": wake, "threads": threads}) + "\\n")
"""


def _probe(**switches: str) -> Dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env.update(switches)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(DEMO)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    report: Dict[str, Any] = json.loads(out.stderr.decode().strip().splitlines()[-1])
    assert report["status"] == 0, report
    return report


def _core_policies(report: Dict[str, Any]) -> List[int]:
    policies = [policy for name, policy, _ in report["threads"] if name == "acp-facade"]
    assert policies, f"no thread of the core's runtime: {report['threads']}"
    return policies


def _main_policy(report: Dict[str, Any]) -> int:
    return next(policy for _, policy, main in report["threads"] if main)


@linux_only
def test_the_bridge_wakes_the_loop_through_an_eventfd_unless_switched_off() -> None:
    assert _probe()["wake"] == "anon_inode:[eventfd]"
    assert _probe(ACP_FACADE_NO_EVENTFD="1")["wake"].startswith("socket:")
    # Only `1` switches it off.
    assert _probe(ACP_FACADE_NO_EVENTFD="0")["wake"] == "anon_inode:[eventfd]"


@linux_only
def test_the_core_runs_in_sched_batch_unless_switched_off() -> None:
    on = _probe()
    assert set(_core_policies(on)) == {os.SCHED_BATCH}
    off = _probe(ACP_FACADE_NO_SCHED_BATCH="1")
    if _main_policy(off) == os.SCHED_BATCH:
        pytest.skip("this process already runs in SCHED_BATCH: the policy a thread inherits is the same")
    assert set(_core_policies(off)) == {_main_policy(off)}


@linux_only
def test_this_process_uses_the_wake_up_its_environment_selects() -> None:
    # Under every switch off (scripts/lib/fallbacks.sh) the whole suite runs on the socket pair.
    wake = os.readlink(f"/proc/self/fd/{_native.bridge_fileno()}")
    if os.environ.get("ACP_FACADE_NO_EVENTFD") == "1":
        assert wake.startswith("socket:"), wake
    else:
        assert wake == "anon_inode:[eventfd]", wake


def test_the_switches_are_documented() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "internals" / "README.md").read_text()
    for switch in SWITCHES:
        assert f"`{switch}=1`" in page, switch
