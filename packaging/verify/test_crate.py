"""The crate acp-facade: what `cargo package` put into dist/ (it also compiled it: scripts/release)."""

from __future__ import annotations

import tarfile
import tomllib
from typing import Dict

from conftest import ROOT, VERSION, artifact

CRATE = f"acp-facade-{VERSION}.crate"


def files() -> Dict[str, bytes]:
    with tarfile.open(artifact(CRATE)) as t:
        top = f"acp-facade-{VERSION}/"
        return {m.name[len(top) :]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_crate_holds_the_library_readme_and_licences() -> None:
    found = files()
    for name in ("Cargo.toml", "README.md", "LICENSE-MIT", "LICENSE-APACHE", "src/lib.rs", "src/runner/mod.rs"):
        assert name in found, name
    assert not [n for n in found if n.startswith("tests/")], "the tests read files outside the crate: not packaged"
    for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
        assert found[licence] == (ROOT / licence).read_bytes(), licence
    assert found["README.md"] == (ROOT / "core" / "README.md").read_bytes()


def test_crate_metadata_for_crates_io_and_docs_rs() -> None:
    package = tomllib.loads(files()["Cargo.toml"].decode())["package"]
    assert package["name"] == "acp-facade" and package["version"] == VERSION
    assert package["license"] == "MIT OR Apache-2.0"
    assert package["readme"] == "README.md"
    assert package["description"]
    assert 1 <= len(package["keywords"]) <= 5 and 1 <= len(package["categories"]) <= 5
    assert package["metadata"]["docs"]["rs"]["targets"], package["metadata"]
    # No address that does not exist: none is given until the project has one.
    for field in ("repository", "homepage", "documentation"):
        assert field not in package, field
