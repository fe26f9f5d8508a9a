"""The README's snippets, each checked in its own language: the Python quick start and the "read a
file and run a command through the editor" snippet run as agents under the official ACP Python
client; the JSON and TOML snippets parse and name what exists. (The
Rust quick start is a doc test of the core crate, the Node one runs in bindings-node/test, and the
Install commands run in the release verification, packaging/verify.)"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import List, Tuple

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

from conftest import ROOT, RecordingClient, SchemaObserver, run

README = ROOT / "README.md"


def blocks() -> List[Tuple[str, str, str]]:
    """Every fenced block of the README: (language, the `## ` section it is in, its text)."""
    found = []
    section = ""
    language = None
    lines: List[str] = []
    for line in README.read_text().splitlines():
        if language is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("```"):
                language, lines = line[3:].strip().split(",")[0], []
        elif line.startswith("```"):
            found.append((language, section, "\n".join(lines) + "\n"))
            language = None
        else:
            lines.append(line)
    assert language is None, "an unclosed code block"
    return found


def of(language: str) -> List[str]:
    return [text for lang, _, text in blocks() if lang == language]


CHECKED_ELSEWHERE = {
    "rust": "a doc test of the core crate (core/src/lib.rs includes the README)",
    "js": "bindings-node/test/readme.test.mjs",
}


def test_every_snippet_is_checked_somewhere() -> None:
    here = {"python", "json", "toml"}
    for language, section, text in blocks():
        if language == "sh":
            # Install commands run in the release verification; the others are this test suite's
            # own command and the demo under acpx (its build and acpx's download are not repeated),
            # on an SQLite file or on a PostgreSQL database of the reader's (the demos on a real
            # PostgreSQL server: the fleet scenarios of tests/scenarios/fleet.py).
            # The quick start's commands that make a new Rust project are checked against the
            # Install section below (test_rust_quick_start_project_uses_the_vendored_crates).
            assert section in ("Install", "Try it", "Contributing", "A remote agent", "A fleet on PostgreSQL", "Quick start"), (
                section,
                text,
            )
            if section == "Contributing":
                assert text.strip() == "scripts/test", text
            continue
        assert language in here or language in CHECKED_ELSEWHERE, f"a {language!r} snippet nobody checks: {text}"


def test_python_quick_start_serves_the_official_client() -> None:
    snippet, _editor, _remote = of("python")

    async def body() -> None:
        with tempfile.TemporaryDirectory() as cwd:
            script = Path(cwd) / "quick_start.py"
            script.write_text(snippet)
            client, observer = RecordingClient(), SchemaObserver()
            async with spawn_agent_process(client, sys.executable, str(script), cwd=cwd, observers=[observer]) as (conn, _):
                init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
                assert init.agent_info is not None and (init.agent_info.name, init.agent_info.version) == ("echo", "1.0.0")
                session = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
                reply = await conn.prompt(session_id=session, prompt=[text_block("hello brave  world")])
                assert reply.stop_reason == "end_turn"
                assert client.chunks() == ["hello ", "brave ", "world "]
                usage = [u for _, u in client.updates if u.session_update == "usage_update"]
                assert [(u.used, u.size) for u in usage] == [(42, 200_000)]
            assert (Path(cwd) / "sessions.sqlite").is_file(), "the quick start keeps its sessions in SQLite"
            assert not observer.violations, observer.violations

    run(body)


def test_python_editor_snippet_reads_and_runs_through_the_client() -> None:
    from test_client import Editor, capabilities

    _quick_start, snippet, _remote = of("python")

    async def body() -> None:
        with tempfile.TemporaryDirectory() as cwd:
            script = Path(cwd) / "editor.py"
            script.write_text(snippet)
            for caps in (capabilities(read=True, terminal=True), capabilities(elicitation=True)):
                client, observer = Editor(), SchemaObserver()
                async with spawn_agent_process(client, sys.executable, str(script), cwd=cwd, observers=[observer]) as (conn, _):
                    init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
                    assert init.agent_info is not None and init.agent_info.name == "editor"
                    session = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
                    said = []
                    for line in ("read /work/notes.txt", "run true", "read relative.txt"):
                        client.clear()
                        reply = await conn.prompt(session_id=session, prompt=[text_block(line)])
                        assert reply.stop_reason == "end_turn"
                        said.append("".join(client.chunks()))
                if caps.terminal:
                    assert said[:2] == ["one\ntwo\nthree\n", "hello\nexit: 0"]
                    assert said[2].startswith("read failed: -32602 ")
                    assert [c for c, _ in client.calls] == ["read", "create", "wait", "output", "release"]
                    assert client.named("create")[0]["cwd"] == str(Path(cwd).resolve())
                else:
                    assert said[0].startswith("read failed: -32601 ") and said[1].startswith("run failed: -32601 ")
                    assert client.calls == [], "nothing sent to a client that did not advertise it"
                assert not observer.violations, observer.violations

    run(body)


def test_python_remote_snippet_serves_over_http_until_sigterm() -> None:
    import signal
    import subprocess

    from remote_client import bearer, http_connection, said
    from test_remote import initialize_status

    (snippet,) = [text for lang, section, text in blocks() if lang == "python" and section == "A remote agent"]
    assert '"127.0.0.1:8080"' in snippet
    with tempfile.TemporaryDirectory() as cwd:
        script = Path(cwd) / "remote.py"
        script.write_text(snippet.replace('"127.0.0.1:8080"', '"127.0.0.1:0"'))
        process = subprocess.Popen(
            [sys.executable, str(script)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            assert re.fullmatch(r"http://127\.0\.0\.1:[1-9]\d*/acp", url), url

            async def body() -> None:
                assert await initialize_status(url, bearer("wrong")) == 401
                async with http_connection(url, token="s3cret") as (conn, _):
                    session = await conn.new_session()
                    assert (await conn.prompt(session, "stream 2"))["result"]["stopReason"] == "end_turn"
                    assert said(conn.seen) == "t1 t2 "

            run(body)
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            assert out == "" and err == ""
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_zed_settings_name_the_three_demos() -> None:
    (settings,) = [json.loads(text) for text in of("json") if "agent_servers" in text]
    servers = settings["agent_servers"]
    assert len(servers) == 3
    commands = [" ".join([entry["command"], *entry["args"]]) for entry in servers.values()]
    assert any(c.endswith("dist/acp-facade-demo --store /absolute/path/to/demo.sqlite") for c in commands), commands
    assert any(c.startswith("/absolute/path/to/.venv/bin/acp-facade-demo ") for c in commands), commands
    assert any(c.startswith("/absolute/path/to/node_modules/.bin/acp-facade-demo ") for c in commands), commands
    for entry in servers.values():
        assert entry["type"] == "custom" and isinstance(entry["args"], list)


def test_rust_dependencies_match_the_release() -> None:
    with open(ROOT / "Cargo.toml", "rb") as f:
        version = tomllib.load(f)["workspace"]["package"]["version"]
    (manifest,) = [tomllib.loads(text) for text in of("toml")]
    dependencies = manifest["dependencies"]
    assert {"async-trait", "tokio", "serde_json"} <= set(dependencies)
    (extract,) = [text for lang, section, text in blocks() if lang == "sh" and section == "Install" and ".crate" in text]
    # Both crates: the facade, and the runner on top of it.
    for crate in ("acp-facade", "acp-facade-runner"):
        assert dependencies[crate]["path"] == f"vendor/{crate}-{version}"
        assert re.search(rf"dist/{re.escape(crate)}-{re.escape(version)}\.crate -C vendor", extract), extract


def test_rust_quick_start_project_uses_the_vendored_crates() -> None:
    """The commands that make a new project for the Rust quick start unpack the crates of dist/ as
    Install does, add both by path, and patch the runner's own dependency on the facade the way the
    Install manifest does (until the crates are published, crates.io has no acp-facade)."""
    with open(ROOT / "Cargo.toml", "rb") as f:
        version = tomllib.load(f)["workspace"]["package"]["version"]
    (setup,) = [text for lang, section, text in blocks() if lang == "sh" and section == "Quick start"]
    (manifest,) = [tomllib.loads(text) for text in of("toml")]
    facade = f"vendor/acp-facade-{version}"
    assert manifest["patch"]["crates-io"]["acp-facade"]["path"] == facade
    assert setup.startswith("cargo new "), setup
    for crate in ("acp-facade", "acp-facade-runner"):
        assert f"tar -xzf ../dist/{crate}-{version}.crate -C vendor\n" in setup, setup
        assert f"cargo add --path vendor/{crate}-{version}\n" in setup, setup
    patch = re.search(r"^printf '(.*)' >> Cargo.toml$", setup, re.M)
    assert patch is not None, setup
    appended = tomllib.loads(patch.group(1).replace("\\n", "\n"))
    assert appended == {"patch": manifest["patch"]}, appended
    for dependency in ("async-trait", "tokio"):
        assert re.search(rf"^cargo add {dependency}@", setup, re.M), dependency
