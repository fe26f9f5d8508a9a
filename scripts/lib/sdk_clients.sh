# The official SDKs' ACP v2 (Preview) clients driving the three demo agents (sourced by scripts/test:
# `source scripts/lib/sdk_clients.sh`, from the repository root; after scripts/lib/bindings.sh).
#
# Two clients, one scenario (docs/DEMO.md in v2's terms: prompt lines, cancel, config options,
# close, resume with a replay, --auth):
# - the Rust SDK `agent-client-protocol` 5.2.0 (feature `unstable_protocol_v2`):
#   tests/sdk-clients/rust-v2, its own package and lock file (the SDK pins schema crate 1.17.0),
#   built into $CARGO_TARGET_DIR/sdk-clients (default target/sdk-clients);
# - the TypeScript SDK 2.4 (`acp-sdk-2/experimental/v2`): bindings-node/test/sdk2_v2.test.mjs,
#   which also validates every agent message against schema/v2/schema.json. The plain
#   `node --test` runs of scripts/test run it too, on the Rust and Node demos with none required.
#
# Also here, since it needs the venv's Python: the TypeScript SDK 2.4's remote clients against the
# Python demo's --listen (bindings-node/test/remote_sdk_python.test.mjs; skipped by the plain
# `node --test` runs, which have no Python named).
#
# ACP_SDK_V2_REQUIRE (default `rust,python,node`): the demos that must answer protocolVersion 2; a
# demo not named that answers 1 is skipped (and said so). ACP_SDK_V2_STRICT=1 fails the defects
# both clients list as known (KNOWN_DEFECTS) instead of reporting them.

SDK_CLIENTS_TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
case "$SDK_CLIENTS_TARGET" in /*) ;; *) SDK_CLIENTS_TARGET="$PWD/$SDK_CLIENTS_TARGET" ;; esac
SDK_CLIENTS_TARGET="$SDK_CLIENTS_TARGET/sdk-clients"
SDK_V2_CLIENT="$SDK_CLIENTS_TARGET/debug/acp-sdk-v2-client"

# Builds the Rust SDK's v2 client (debug, without debug info: about 1.6 CPU minutes and 340 MB from
# scratch, a second once built; a run takes about half a second a demo).
build_sdk_v2_client() {
    CARGO_TARGET_DIR="$SDK_CLIENTS_TARGET" cargo build --quiet --locked \
        --manifest-path tests/sdk-clients/rust-v2/Cargo.toml
}

# Runs both clients against the Rust demo ($ACP_FACADE_RUST_DEMO, else the debug build under
# $CARGO_TARGET_DIR or target/), the Python demo on the venv's wheel ($PY_VENV) and the Node demo
# on the built addon. Every client and demo runs even after a failure; fails if any failed.
run_sdk_v2_clients() {
    local require="${ACP_SDK_V2_REQUIRE-rust,python,node}"
    local rust_demo="${ACP_FACADE_RUST_DEMO:-${CARGO_TARGET_DIR:-$PWD/target}/debug/acp-facade-demo}"
    local python="$PWD/${PY_VENV:-target/py-venv}/bin/python"
    local status=0 demo
    local -a flags=() command=()
    if [ "${ACP_SDK_V2_STRICT:-}" = 1 ]; then
        flags+=(--strict)
    fi
    echo "-- the Rust SDK's v2 client (tests/sdk-clients/rust-v2); required: ${require:-none}"
    for demo in rust python node; do
        case "$demo" in
            rust) command=("$rust_demo") ;;
            python) command=("$python" examples/python/demo_host.py) ;;
            node) command=(node examples/node/demo_host.mjs) ;;
        esac
        if [[ ",$require," == *",$demo,"* ]]; then
            "$SDK_V2_CLIENT" "${flags[@]}" -- "${command[@]}" || status=1
        else
            "$SDK_V2_CLIENT" "${flags[@]}" --allow-v1 -- "${command[@]}" || status=1
        fi
    done
    echo "-- the TypeScript SDK's v2 client (bindings-node/test/sdk2_v2.test.mjs); required: ${require:-none}"
    ACP_SDK_V2_REQUIRE="$require" ACP_SDK_V2_PYTHON="$python" ACP_FACADE_RUST_DEMO="$rust_demo" \
        node --test --test-timeout=120000 bindings-node/test/sdk2_v2.test.mjs || status=1
    # The SDK 2.4 remote clients against the Python demo's --listen (the Rust demo's run with the
    # Node suite): it needs the venv's Python, known here.
    echo "-- the TypeScript SDK's remote clients against the Python demo (bindings-node/test/remote_sdk_python.test.mjs)"
    ACP_SDK_V2_REQUIRE="$require" ACP_SDK_V2_PYTHON="$python" \
        node --test --test-timeout=120000 bindings-node/test/remote_sdk_python.test.mjs || status=1
    return "$status"
}
