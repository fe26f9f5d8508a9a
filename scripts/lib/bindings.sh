# Builds and installs the Python and Node bindings, for scripts/test and scripts/bench (sourced:
# `source scripts/lib/bindings.sh`, from the repository root).

# The Python binding: a venv inside target/ (nothing committed), the pinned test tools (which include
# the official Python ACP SDK the benchmark also runs), and the package built by maturin from the
# root pyproject.toml exactly as `pip install .` does (a release build).
PY_VENV=target/py-venv
setup_python_binding() {
    if [ ! -x "$PY_VENV/bin/python" ]; then
        python3 -m venv "$PY_VENV"
    fi
    "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r bindings-python/requirements-test.txt
    PATH="$PWD/$PY_VENV/bin:$PATH" "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        --no-build-isolation --force-reinstall --no-deps .
}

# The Python binding for the test suites: the same venv and test tools, with the wheel that
# scripts/release built (`scripts/release build`: the shipped artifact, built from the sdist) in
# place of a second build by `pip install .`.
install_python_wheel() {
    local wheel
    wheel="$(ls dist/acp_facade-*.whl)"
    if [ ! -x "$PY_VENV/bin/python" ]; then
        python3 -m venv "$PY_VENV"
    fi
    "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r bindings-python/requirements-test.txt
    "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
}

# The Node binding: `npm ci` installs the pinned tools from package-lock.json (the official TS ACP
# SDK among them) and builds the addon (the root package.json "prepare" script). $1 is the addon's
# profile: `release` (what `npm install` builds) or `debug` (quicker right after `cargo test`, whose
# dependencies it reuses).
setup_node_binding() {
    case "${1:-release}" in
        debug) ACP_FACADE_NODE_DEBUG=1 npm ci --no-audit --no-fund ;;
        release) ACP_FACADE_NODE_DEBUG= npm ci --no-audit --no-fund ;;
        *) echo "setup_node_binding: debug or release, not $1" >&2; return 2 ;;
    esac
}
