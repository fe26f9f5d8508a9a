"""The `.pyi` stubs and inline types cannot drift: mypy's stubtest checks the stubs of the
native module against the built module, and mypy --strict checks the package and examples."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.timeout(300)
def test_stubtest_native_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "acp_facade._native"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(300)
def test_mypy_strict_on_package_and_examples() -> None:
    for target in (["-p", "acp_facade"], [str(ROOT / "examples" / "python")]):
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *target],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_every_public_name_is_documented() -> None:
    import acp_facade

    # Documented where defined (type aliases carry no __doc__ of their own).
    aliases = {
        "__version__",
        "MODE_CONFIG_ID",
        "ContentBlock",
        "ElicitationSchema",
        "EventKind",
        "ExtensionMethod",
        "ExtensionNotification",
        "McpServer",
        "Message",
        "Meta",
        "PromptBlock",
        "TokenVerifier",
        "ToolCallContent",
    }
    missing = [n for n in acp_facade.__all__ if n not in aliases and not getattr(getattr(acp_facade, n), "__doc__", None)]
    assert not missing, missing
