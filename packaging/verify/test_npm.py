"""The npm packages: acp-facade (JavaScript, declarations, demo) and acp-facade-linux-x64-gnu (the
prebuilt addon), installed together, apart, and from a checkout, each without Rust."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import CLIENTS, MAX_DOWNLOAD_BYTES, ROOT, VERSION, artifact, assert_stripped_native, run

MAIN = f"acp-facade-{VERSION}.tgz"
ADDON = f"acp-facade-linux-x64-gnu-{VERSION}.tgz"
DEV = json.loads((ROOT / "package.json").read_text())["devDependencies"]
"""The repository's pinned tools: the verification installs the same versions."""


def members(tgz: Path) -> Dict[str, bytes]:
    with tarfile.open(tgz) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


def manifest(tgz: Path) -> Dict[str, Any]:
    return json.loads(members(tgz)["package/package.json"])


def test_addon_package_is_the_stripped_linux_x64_gnu_addon() -> None:
    package = artifact(ADDON)
    assert package.stat().st_size <= MAX_DOWNLOAD_BYTES, f"{package.name}: {package.stat().st_size} bytes"
    files = members(package)
    pkg = json.loads(files["package/package.json"])
    assert pkg["name"] == "acp-facade-linux-x64-gnu" and pkg["version"] == VERSION
    assert (pkg["os"], pkg["cpu"], pkg["libc"]) == (["linux"], ["x64"], ["glibc"])
    assert pkg["main"] == "acp-facade.linux-x64-gnu.node"
    assert_stripped_native(files["package/acp-facade.linux-x64-gnu.node"], "the addon")
    for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
        assert files[f"package/{licence}"] == (ROOT / licence).read_bytes()


def test_main_package_has_no_addon_and_depends_on_the_platform_package() -> None:
    files = members(artifact(MAIN))
    assert not [n for n in files if n.endswith(".node")], "the main package carries no addon"
    pkg = json.loads(files["package/package.json"])
    assert pkg["name"] == "acp-facade" and pkg["version"] == VERSION
    assert pkg["optionalDependencies"] == {"acp-facade-linux-x64-gnu": VERSION}
    assert pkg["bin"] == {"acp-facade-demo": "examples/node/demo_host.mjs"}
    assert "devDependencies" not in pkg and "scripts" not in pkg
    assert pkg["peerDependencies"]["@types/node"] and pkg["peerDependenciesMeta"]["@types/node"]["optional"] is True
    for name in (
        "bindings-node/index.js",
        "bindings-node/index.mjs",
        "bindings-node/native.js",
        "bindings-node/index.d.ts",
        "bindings-node/native.d.ts",
        "examples/node/demo_host.mjs",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "CHANGELOG.md",
    ):
        assert f"package/{name}" in files, name


def new_project(directory: Path) -> Path:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / "package.json").write_text(json.dumps({"name": "verify", "version": "1.0.0", "private": True}))
    return directory


NPM_INSTALL = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"]


@pytest.fixture(scope="module")
def project(work: Path, no_rust_env: Dict[str, str]) -> Path:
    """A fresh npm project with both packages, the official ACP client and the TypeScript tools."""
    project = new_project(work / "npm-project")
    tools = [f"{name}@{DEV[name]}" for name in ("@agentclientprotocol/sdk", "typescript", "@types/node")]
    run([*NPM_INSTALL, str(artifact(MAIN)), str(artifact(ADDON)), *tools], no_rust_env, cwd=project)
    return project


@pytest.mark.parametrize(
    "command",
    [["node_modules/.bin/acp-facade-demo"], ["node", "node_modules/acp-facade/examples/node/demo_host.mjs"]],
    ids=["command", "file"],
)
def test_installed_demo_help_and_bad_arguments(project: Path, no_rust_env: Dict[str, str], command: List[str]) -> None:
    demo = [str(project / command[0]) if command[0].startswith("node_modules") else command[0], *command[1:]]
    shown = run([*demo, "--help"], no_rust_env, cwd=project)
    assert shown.stdout.startswith("usage: acp-facade-demo ") and "--store" in shown.stdout and shown.stderr == ""
    bad = run([*demo, "--bogus"], no_rust_env, cwd=project, check=False)
    assert bad.returncode == 2 and bad.stdout == "", bad
    assert len(bad.stderr.splitlines()) == 1 and "--bogus" in bad.stderr, bad.stderr


def test_installed_demo_serves_a_prompt_turn_to_the_official_client(project: Path, no_rust_env: Dict[str, str]) -> None:
    shutil.copy(CLIENTS / "prompt_turn.mjs", project / "prompt_turn.mjs")
    demo = str(project / "node_modules/.bin/acp-facade-demo")
    result = run(["node", "prompt_turn.mjs", demo, "--store", ":memory:"], no_rust_env, cwd=project)
    assert result.stdout.startswith(f"ok: acp-facade-demo {VERSION}"), result.stdout


def test_typescript_users_get_the_types(project: Path, no_rust_env: Dict[str, str]) -> None:
    (project / "tsconfig.json").write_text(
        json.dumps({"compilerOptions": {"module": "NodeNext", "moduleResolution": "NodeNext", "target": "ES2022", "strict": True, "noEmit": True}, "files": ["check.mts"]})
    )
    (project / "check.mts").write_text(
        "import { AcpError, Runner, SqliteStore, type Turn } from 'acp-facade'\n"
        "const runner = new Runner(SqliteStore.open(':memory:'), {\n"
        "  async runTurn(turn: Turn) { await turn.text(turn.promptText); return 'end_turn' as const },\n"
        "})\n"
        "const agent = runner.agent({ agentName: 'check', agentVersion: '1' })\n"
        "void agent.serve(process.stdin, process.stdout)\n"
        "void new AcpError(-32602, 'bad')\n"
    )
    run(["node", str(project / "node_modules/typescript/bin/tsc"), "-p", "."], no_rust_env, cwd=project)


def test_a_missing_addon_package_is_named(work: Path, no_rust_env: Dict[str, str]) -> None:
    project = new_project(work / "npm-without-addon")
    run([*NPM_INSTALL, "--omit=optional", str(artifact(MAIN))], no_rust_env, cwd=project)
    result = run(["node", "-e", "require('acp-facade')"], no_rust_env, cwd=project, check=False)
    assert result.returncode != 0
    assert f"the native addon package acp-facade-linux-x64-gnu is not installed" in result.stderr, result.stderr
    assert f"npm install acp-facade-linux-x64-gnu@{VERSION}" in result.stderr, result.stderr


def test_a_checkout_installed_without_rust_says_rust_is_needed(work: Path, no_rust_env: Dict[str, str]) -> None:
    project = new_project(work / "npm-from-checkout")
    result = run([*NPM_INSTALL, str(ROOT)], no_rust_env, cwd=project, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "building the native addon from source needs Rust, and `cargo` is not on PATH" in output, output
