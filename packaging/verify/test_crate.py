"""The crates acp-facade and acp-facade-runner: what `cargo package` put into dist/ (it also
compiled them: scripts/release)."""

from __future__ import annotations

import tarfile
import tomllib
from typing import Dict

import pytest

from conftest import ROOT, VERSION, artifact

# Each crate: its folder in the repository, and a module file it must carry.
CRATES = {"acp-facade": ("core", "src/rpc/mod.rs"), "acp-facade-runner": ("runner", "src/store/sqlite/mod.rs")}


def files(crate: str) -> Dict[str, bytes]:
    with tarfile.open(artifact(f"{crate}-{VERSION}.crate")) as t:
        top = f"{crate}-{VERSION}/"
        return {m.name[len(top) :]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


@pytest.mark.parametrize("crate", sorted(CRATES))
def test_crate_holds_the_library_readme_and_licences(crate: str) -> None:
    folder, module = CRATES[crate]
    found = files(crate)
    for name in ("Cargo.toml", "README.md", "LICENSE-MIT", "LICENSE-APACHE", "src/lib.rs", module):
        assert name in found, name
    assert not [n for n in found if n.startswith("tests/")], "the tests read files outside the crate: not packaged"
    for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
        assert found[licence] == (ROOT / licence).read_bytes(), licence
    assert found["README.md"] == (ROOT / folder / "README.md").read_bytes()


def test_the_facade_crate_carries_no_runner_and_no_database() -> None:
    found = files("acp-facade")
    assert not [n for n in found if n.startswith("src/runner")], "the runner is its own crate"
    manifest = tomllib.loads(found["Cargo.toml"].decode())
    for name in ("rusqlite", "tokio-postgres", "deadpool-postgres", "acp-facade-runner"):
        assert name not in manifest.get("dependencies", {}), name


def test_the_runner_names_the_facade_at_this_version_and_its_stores_as_features() -> None:
    manifest = tomllib.loads(files("acp-facade-runner")["Cargo.toml"].decode())
    assert manifest["dependencies"]["acp-facade"]["version"] == f"={VERSION}"
    assert manifest["features"]["default"] == ["sqlite"]
    assert manifest["dependencies"]["rusqlite"]["optional"] is True
    assert manifest["dependencies"]["tokio-postgres"]["optional"] is True
    assert "acp-facade-runner" not in manifest.get("dev-dependencies", {}), "the tests' self-dependency is not published"


@pytest.mark.parametrize("crate", sorted(CRATES))
def test_crate_metadata_for_crates_io_and_docs_rs(crate: str) -> None:
    package = tomllib.loads(files(crate)["Cargo.toml"].decode())["package"]
    assert package["name"] == crate and package["version"] == VERSION
    assert package["license"] == "MIT OR Apache-2.0"
    assert package["readme"] == "README.md"
    assert package["description"]
    assert 1 <= len(package["keywords"]) <= 5 and 1 <= len(package["categories"]) <= 5
    assert package["metadata"]["docs"]["rs"]["targets"], package["metadata"]
    # No address that does not exist: none is given until the project has one.
    for field in ("repository", "homepage", "documentation"):
        assert field not in package, field
