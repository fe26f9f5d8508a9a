"""One version everywhere, set in one place: `[workspace.package] version` in the root Cargo.toml.

The crate, the wheel and the sdist take it from there at build time; npm needs it written in its
manifests, so those copies are checked here (scripts/set-version writes them all), and so is every
artifact's name in dist/."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from conftest import DIST, ROOT, VERSION


def read_json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_every_manifest_has_the_workspace_version() -> None:
    assert read_json(ROOT / "package.json")["version"] == VERSION
    lock = read_json(ROOT / "package-lock.json")
    assert lock["version"] == VERSION and lock["packages"][""]["version"] == VERSION
    assert read_json(ROOT / "packaging/npm/linux-x64-gnu/package.json")["version"] == VERSION
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    assert "version" not in project and "version" in project["dynamic"], "the wheel's version comes from Cargo"
    for manifest in ("core", "runner", "bindings-python", "bindings-node", "examples/demo-agent"):
        with open(ROOT / manifest / "Cargo.toml", "rb") as f:
            assert tomllib.load(f)["package"]["version"] == {"workspace": True}, manifest


def test_the_changelog_has_this_version() -> None:
    headings = [line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")]
    assert headings and headings[0].split()[1] == VERSION, headings[:1]


def test_every_artifact_is_this_version() -> None:
    names = sorted(p.name for p in DIST.iterdir())
    expected = [
        f"acp-facade-{VERSION}.crate",
        "acp-facade-demo",  # the Rust demo agent; its version is the one it reports (test_demo_binary.py)
        f"acp-facade-{VERSION}.tgz",
        f"acp-facade-linux-x64-gnu-{VERSION}.tgz",
        f"acp-facade-runner-{VERSION}.crate",
        f"acp_facade-{VERSION}.tar.gz",
    ]
    wheels = [n for n in names if n.endswith(".whl")]
    assert len(wheels) == 1 and wheels[0].startswith(f"acp_facade-{VERSION}-"), names
    assert sorted(n for n in names if not n.endswith(".whl")) == sorted(expected), names


def test_the_docs_name_this_version() -> None:
    """Install commands name artifacts by version: they must name this one."""
    for doc in [ROOT / "README.md", ROOT / "packaging" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for found in re.findall(r"acp[-_]facade-(\d+\.\d+\.\d+)\b", doc.read_text()):
            assert found == VERSION, f"{doc.relative_to(ROOT)} names version {found}, not {VERSION}"


def test_licences_are_one_text() -> None:
    for crate in ("core", "runner"):
        for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
            assert (ROOT / crate / licence).read_bytes() == (ROOT / licence).read_bytes(), f"{crate}/{licence} differs"


def test_no_repository_address_is_invented() -> None:
    assert "repository" not in read_json(ROOT / "package.json")
    with open(ROOT / "Cargo.toml", "rb") as f:
        assert "repository" not in tomllib.load(f)["workspace"]["package"]
