# The bindings' suites with every performance mechanism switched off, so that each mechanism's
# plain path (its fallback) is tested too (sourced: `source scripts/lib/fallbacks.sh`, from the
# repository root). The switches are those of docs/internals/README.md; each selects the path the
# binding also takes where its mechanism is unavailable.

# Runs the Python and the Node binding's suites once with ACP_FACADE_NO_UV_RELAY,
# ACP_FACADE_NO_SCHED_BATCH and ACP_FACADE_NO_EVENTFD set to 1. Assumes what scripts/lib/bindings.sh
# sets up: the venv $PY_VENV with the package and the test tools installed, and `npm ci` run
# (node_modules and the addon built). The variables are set for the two suites only, not in the
# caller's shell. Fails when either suite fails (both run).
track_bindings_without_tuning() {
    local status=0
    echo "== the bindings with every performance mechanism switched off ==" >&2
    (
        export ACP_FACADE_NO_UV_RELAY=1 ACP_FACADE_NO_SCHED_BATCH=1 ACP_FACADE_NO_EVENTFD=1
        "${PY_VENV:-target/py-venv}/bin/python" -m pytest bindings-python/tests -p no:cacheprovider --timeout=120 -q
    ) || status=1
    (
        export ACP_FACADE_NO_UV_RELAY=1 ACP_FACADE_NO_SCHED_BATCH=1 ACP_FACADE_NO_EVENTFD=1
        node --test --test-concurrency=2 --test-timeout=120000 bindings-node/test/*.test.mjs
    ) || status=1
    return "$status"
}
