"""The test PostgreSQL server, for the fleet scenarios: a fresh schema per scenario run, and the
server's control script (scripts/test starts the server and sets both variables; see
scripts/lib/postgres.sh). Without a server the fleet scenarios are skipped, saying so — or fail,
when ``ACP_FACADE_TEST_POSTGRES_REQUIRED=1`` (scripts/test sets it)."""

from __future__ import annotations

import os
import subprocess
import time
from typing import List

import pytest

URL_VAR = "ACP_FACADE_TEST_POSTGRES_URL"
CTL_VAR = "ACP_FACADE_TEST_POSTGRES_CTL"
REQUIRED_VAR = "ACP_FACADE_TEST_POSTGRES_REQUIRED"

_count = 0


def _missing(what: str) -> None:
    if os.environ.get(REQUIRED_VAR) == "1":
        raise AssertionError(f"{REQUIRED_VAR}=1 but {what} is not set")
    pytest.skip(f"{what} is not set: the PostgreSQL fleet scenarios are NOT run (scripts/test starts a server)")


def schema_url(label: str) -> str:
    """A URL for a new, empty schema (``label`` names it, for a reader of the server)."""
    global _count
    base = os.environ.get(URL_VAR)
    if not base:
        _missing(URL_VAR)
        raise AssertionError("unreachable")
    _count += 1
    schema = f"acp_test_{int(time.time())}_{os.getpid()}_{_count}_{label}"
    subprocess.run(["psql", base, "-q", "-c", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
    return f"{base}{'&' if '?' in base else '?'}options=-c%20search_path%3D{schema}"


def control(*args: str) -> None:
    """Runs the server's control script (``pg_ctl`` on the test cluster): ``stop -m fast``, ``start``."""
    ctl = os.environ.get(CTL_VAR)
    if not ctl:
        _missing(CTL_VAR)
        raise AssertionError("unreachable")
    done = subprocess.run([ctl, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{ctl} {' '.join(args)}: {done.stdout}{done.stderr}"


def control_available() -> List[str]:
    """The variables a database-restart scenario needs that are missing."""
    return [v for v in (URL_VAR, CTL_VAR) if not os.environ.get(v)]
