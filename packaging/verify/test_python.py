"""The Python artifacts: the abi3 wheel and the sdist."""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import (
    CLIENTS,
    MAX_DOWNLOAD_BYTES,
    ROOT,
    VERSION,
    artifact,
    assert_stripped_native,
    pinned,
    python_for_users,
    run,
)

WHEEL = f"acp_facade-{VERSION}-cp310-abi3-*manylinux_2_*_x86_64.whl"
SDIST = f"acp_facade-{VERSION}.tar.gz"
ACP_CLIENT = pinned(ROOT / "bindings-python" / "requirements-test.txt", "agent-client-protocol")

sys.path.insert(0, str(ROOT / "bindings-python" / "build_backend"))
from acp_facade_build import NEEDS_RUST  # noqa: E402


def test_wheel_is_abi3_manylinux_stripped_and_small() -> None:
    wheel = artifact(WHEEL)
    assert wheel.stat().st_size <= MAX_DOWNLOAD_BYTES, f"{wheel.name}: {wheel.stat().st_size} bytes"
    tag = re.search(r"manylinux_2_(\d+)_x86_64", wheel.name)
    assert tag is not None and int(tag.group(1)) <= 28, wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        native = [n for n in names if n.startswith("acp_facade/_native") and n.endswith(".so")]
        assert native == ["acp_facade/_native.abi3.so"], native
        assert_stripped_native(z.read(native[0]), native[0])
        metadata = Parser().parsestr(z.read(f"acp_facade-{VERSION}.dist-info/METADATA").decode())
        assert metadata["Version"] == VERSION
        assert metadata["Requires-Python"] == ">=3.10"
        assert metadata["License-Expression"] == "MIT OR Apache-2.0"
        for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
            assert z.read(f"acp_facade-{VERSION}.dist-info/licenses/{licence}") == (ROOT / licence).read_bytes()
        # The demo ships as a module, and the typing marker with the stubs.
        for name in ("acp_facade/demo.py", "acp_facade/py.typed", "acp_facade/_native.pyi"):
            assert name in names, name
        assert z.read("acp_facade/demo.py") == (ROOT / "examples" / "python" / "demo_host.py").read_bytes()


def test_sdist_holds_what_a_source_build_needs() -> None:
    sdist = artifact(SDIST)
    top = f"acp_facade-{VERSION}"
    with tarfile.open(sdist) as t:
        members = {m.name: m for m in t.getmembers()}
        for name in (
            "pyproject.toml",
            "Cargo.toml",
            "Cargo.lock",
            "LICENSE-MIT",
            "LICENSE-APACHE",
            "README.md",
            "bindings-python/build_backend/acp_facade_build.py",
            "bindings-python/src/lib.rs",
            "bindings-python/python/acp_facade/__init__.py",
            "core/src/lib.rs",
            "core/README.md",
            "runner/src/lib.rs",
            "runner/src/store/sqlite/mod.rs",
        ):
            assert f"{top}/{name}" in members, name
        demo = members[f"{top}/bindings-python/python/acp_facade/demo.py"]
        assert demo.isfile(), "the demo module must be a file in the sdist, not a link"
        info = t.extractfile(f"{top}/PKG-INFO")
        assert info is not None
        assert Parser().parsestr(info.read().decode())["Version"] == VERSION


@pytest.fixture(scope="module")
def venv(work: Path, no_rust_env: Dict[str, str]) -> Path:
    """A fresh virtual environment with the wheel and the official ACP client installed, without Rust."""
    venv = work / "python-wheel"
    run([python_for_users(no_rust_env), "-m", "venv", str(venv)], no_rust_env)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    run([*pip, str(artifact(WHEEL)), ACP_CLIENT], no_rust_env)
    return venv


def test_wheel_imports_with_its_version(venv: Path, no_rust_env: Dict[str, str]) -> None:
    script = "import acp_facade, acp_facade._native as n; print(acp_facade.__version__, n.__file__)"
    out = run([str(venv / "bin" / "python"), "-c", script], no_rust_env).stdout.split()
    assert out[0] == VERSION
    assert out[1].startswith(str(venv)), out


@pytest.mark.parametrize("command", [["acp-facade-demo"], ["python", "-m", "acp_facade.demo"]], ids=["command", "module"])
def test_installed_demo_help_and_bad_arguments(venv: Path, no_rust_env: Dict[str, str], command: List[str]) -> None:
    demo = [str(venv / "bin" / command[0]), *command[1:]]
    shown = run([*demo, "--help"], no_rust_env)
    assert shown.stdout.startswith("usage: acp-facade-demo ") and "--store" in shown.stdout and shown.stderr == ""
    bad = run([*demo, "--page-size", "0"], no_rust_env, check=False)
    assert bad.returncode == 2 and bad.stdout == "", bad
    assert len(bad.stderr.splitlines()) == 1 and "--page-size" in bad.stderr, bad.stderr


def test_installed_demo_serves_a_prompt_turn_to_the_official_client(venv: Path, no_rust_env: Dict[str, str]) -> None:
    python, demo = str(venv / "bin" / "python"), str(venv / "bin" / "acp-facade-demo")
    result = run([python, str(CLIENTS / "prompt_turn.py"), demo, "--store", ":memory:"], no_rust_env)
    assert result.stdout.startswith(f"ok: acp-facade-demo {VERSION}"), result.stdout


def test_sdist_without_rust_fails_with_one_clear_sentence(work: Path, no_rust_env: Dict[str, str]) -> None:
    venv = work / "python-sdist"
    run([python_for_users(no_rust_env), "-m", "venv", str(venv)], no_rust_env)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir"]
    result = run([*pip, str(artifact(SDIST))], no_rust_env, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert NEEDS_RUST in output, output
    assert "puccinialin" not in output and "rustup-init" not in output, "it must not try to install Rust"
