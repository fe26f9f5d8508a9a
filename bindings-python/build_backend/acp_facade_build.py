"""The PEP 517 build backend of the acp-facade Python package: maturin, after one check.

Building from source (``pip install .`` in a checkout, or ``pip install`` of the sdist) compiles
the Rust extension, so it needs Rust. Without ``cargo`` on PATH maturin's own backend would try to
download a toolchain, or fail on a message about cargo; this wrapper stops first, with one
sentence saying what is missing and what to do. Everything else is maturin's backend unchanged.
"""

from __future__ import annotations

import shutil
import sys
from typing import Any, List, Mapping, Optional

import maturin
from maturin import build_sdist, get_requires_for_build_sdist  # noqa: F401  (re-exported hooks)

NEEDS_RUST = (
    "acp-facade: building this package from source needs Rust, and `cargo` is not on PATH; "
    "install Rust (https://rustup.rs) and try again, or install the prebuilt wheel instead."
)


def _require_cargo() -> None:
    """Ends the build with the one sentence when cargo is not on PATH."""
    if shutil.which("cargo") is None:
        sys.stderr.write(NEEDS_RUST + "\n")
        sys.stderr.flush()
        raise SystemExit(1)


def get_requires_for_build_wheel(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    _require_cargo()
    return list(maturin.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    _require_cargo()
    return list(maturin.get_requires_for_build_editable(config_settings))


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    _require_cargo()
    return str(maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings))


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Mapping[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    _require_cargo()
    return str(maturin.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str,
    config_settings: Optional[Mapping[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    _require_cargo()
    return str(maturin.build_editable(wheel_directory, config_settings, metadata_directory))


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel
