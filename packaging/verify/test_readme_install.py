"""The README's "Install" commands, run as written in a fresh directory that holds dist/, with no
Rust toolchain: what a reader pastes works, and installs what the rest of the README uses."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import DIST, ROOT, VERSION, run


def install_blocks() -> List[Tuple[str, str, str]]:
    """(subsection, language, text) of every fenced block under "## Install"."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Install\n") :]
    section = section[: section.index("\n## ", 1)]
    found = []
    for part in re.split(r"\n### ", section)[1:]:
        title = part.splitlines()[0].split(" (")[0]
        for language, body in re.findall(r"^```(\w+)\n(.*?)^```$", part, re.M | re.S):
            found.append((title, language, body))
    return found


@pytest.fixture(scope="module")
def reader(work: Path) -> Path:
    """A fresh directory with dist/ in it, as the README assumes."""
    directory = work / "readme-install"
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir()
    shutil.copytree(DIST, directory / "dist")
    return directory


def shell(title: str) -> str:
    blocks = [body for t, language, body in install_blocks() if t == title and language == "sh"]
    assert len(blocks) == 1, f"one sh block under Install / {title}: {blocks}"
    return blocks[0]


def test_install_covers_the_three_languages() -> None:
    assert {t for t, _, _ in install_blocks()} == {"Python", "Node", "Rust"}


def test_python_install_as_written(reader: Path, no_rust_env: Dict[str, str]) -> None:
    result = run(["bash", "-euo", "pipefail", "-c", shell("Python")], no_rust_env, cwd=reader)
    assert "\nusage: acp-facade-demo " in result.stdout, result.stdout
    version = run([str(reader / ".venv/bin/python"), "-c", "import acp_facade; print(acp_facade.__version__)"], no_rust_env)
    assert version.stdout.strip() == VERSION


def test_node_install_as_written(reader: Path, no_rust_env: Dict[str, str]) -> None:
    (reader / "package.json").write_text('{"name": "reader", "private": true}')
    result = run(["bash", "-euo", "pipefail", "-c", shell("Node")], no_rust_env, cwd=reader)
    assert "\nusage: acp-facade-demo " in result.stdout, result.stdout
    for package in ("acp-facade", "acp-facade-linux-x64-gnu"):
        assert (reader / "node_modules" / package / "package.json").is_file(), package


def test_rust_install_as_written(reader: Path, no_rust_env: Dict[str, str]) -> None:
    run(["bash", "-euo", "pipefail", "-c", shell("Rust")], no_rust_env, cwd=reader)
    (manifest,) = [body for t, language, body in install_blocks() if t == "Rust" and language == "toml"]
    path = reader / tomllib.loads(manifest)["dependencies"]["acp-facade"]["path"]
    assert (path / "Cargo.toml").is_file() and (path / "src" / "lib.rs").is_file(), path
    with open(path / "Cargo.toml", "rb") as f:
        assert tomllib.load(f)["package"]["version"] == VERSION
