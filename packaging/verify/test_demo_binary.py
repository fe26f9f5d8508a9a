"""The Rust demo agent, dist/acp-facade-demo: a stripped native executable within the size limit,
needing no newer glibc than the other artifacts, that runs without Rust and serves a prompt turn to
the official ACP client."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict

import pytest

from conftest import CLIENTS, ROOT, VERSION, artifact, assert_stripped_native, pinned, python_for_users, run

DEMO = "acp-facade-demo"
ACP_CLIENT = pinned(ROOT / "bindings-python" / "requirements-test.txt", "agent-client-protocol")


def test_demo_binary_is_stripped_small_and_executable() -> None:
    demo = artifact(DEMO)
    assert os.access(demo, os.X_OK), f"{demo} is not executable"
    assert_stripped_native(demo.read_bytes(), demo.name)


def test_demo_binary_help_and_bad_arguments(no_rust_env: Dict[str, str]) -> None:
    demo = str(artifact(DEMO))
    shown = run([demo, "--help"], no_rust_env)
    assert shown.stdout.startswith("usage: acp-facade-demo ") and "--store" in shown.stdout and shown.stderr == ""
    bad = run([demo, "--page-size", "0"], no_rust_env, check=False)
    assert bad.returncode == 2 and bad.stdout == "", bad
    assert len(bad.stderr.splitlines()) == 1 and "--page-size" in bad.stderr, bad.stderr


@pytest.fixture(scope="module")
def client_venv(work: Path, no_rust_env: Dict[str, str]) -> Path:
    """A fresh virtual environment with only the official ACP client in it."""
    venv = work / "rust-demo-client"
    run([python_for_users(no_rust_env), "-m", "venv", str(venv)], no_rust_env)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", ACP_CLIENT], no_rust_env)
    return venv


def test_demo_binary_serves_a_prompt_turn_to_the_official_client(client_venv: Path, no_rust_env: Dict[str, str]) -> None:
    python = str(client_venv / "bin" / "python")
    result = run([python, str(CLIENTS / "prompt_turn.py"), str(artifact(DEMO)), "--store", ":memory:"], no_rust_env)
    assert result.stdout.startswith(f"ok: acp-facade-demo {VERSION}"), result.stdout
