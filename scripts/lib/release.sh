# The release build and its verification (sourced by scripts/release and scripts/test, from the
# repository root). One build per artifact, every build directory under $CARGO_TARGET_DIR.

RELEASE_TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
case "$RELEASE_TARGET" in /*) ;; *) RELEASE_TARGET="$PWD/$RELEASE_TARGET" ;; esac
RELEASE_TOOLS="$RELEASE_TARGET/release-tools"
DIST="$PWD/dist"
# The glibc the native artifacts are linked against (zig): the manylinux_2_17 wheel tag.
RELEASE_GLIBC=2.17
RELEASE_TRIPLE=x86_64-unknown-linux-gnu

# What the build costs, said before it starts. Measured: the release section of the last
# fresh-clone `scripts/test` run on an idle 2-core machine took about 15 of its 22m07s (see the
# README, "Test"), before the Rust demo joined the build. Most of it is whole-program optimisation
# (fat LTO into one codegen unit, single-threaded) of the Python extension and of the Node addon,
# beside the crates' check; the demo's own optimisation follows the addon's.
RELEASE_EXPECTED="about 15 minutes on an idle 2-core machine from a fresh target directory, most of it \
single-threaded link-time optimisation of the Python extension and the Node addon"

# One line on the console per phase, as the phase starts, stamped with the time since the build
# began: the builds run side by side with their output kept in logs (printed whole at the end), so
# these lines are what shows where the minutes go while it runs. Written to fd 3, the console
# (release_build opens it).
release_phase() {
    local elapsed=$((SECONDS - RELEASE_STARTED))
    printf -- '-- release [%dm%02ds] %s\n' $((elapsed / 60)) $((elapsed % 60)) "$*" >&3
}

release_version() {
    sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml
}

# The pinned release tools in their own venv; zig's caches under the target directory too.
release_tools() {
    if [ ! -x "$RELEASE_TOOLS/bin/python" ]; then
        python3 -m venv "$RELEASE_TOOLS"
    fi
    "$RELEASE_TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check -r packaging/requirements-release.txt
    export XDG_CACHE_HOME="$RELEASE_TARGET/release-cache"
    export ZIG_GLOBAL_CACHE_DIR="$XDG_CACHE_HOME/zig"
}

# The sdist, then the wheel built FROM it (what `pip install acp-facade` from source does), with
# the stripped `dist` profile and zig linking against glibc 2.17.
release_build_python() {
    local version="$1"
    release_phase "python: the sdist (maturin sdist)"
    PATH="$RELEASE_TOOLS/bin:$PATH" maturin sdist --out "$DIST"
    # The sdist's files carry maturin's fixed timestamp (2006), older than any earlier build in
    # this target directory, so cargo would take our crates as up to date and the wheel would ship
    # the native code of that earlier build. Their fingerprints go: our crates are rebuilt, the
    # dependencies stay cached.
    rm -rf "$RELEASE_TARGET"/dist-build/python/*/*/.fingerprint/acp-facade-* \
        "$RELEASE_TARGET"/dist-build/python/*/.fingerprint/acp-facade-*
    release_phase "python: the wheel, built from the sdist (the extension's link-time optimisation is the longest step)"
    PATH="$RELEASE_TOOLS/bin:$PATH" CARGO_TARGET_DIR="$RELEASE_TARGET/dist-build/python" \
        MATURIN_PEP517_ARGS="--profile dist --zig --compatibility manylinux_${RELEASE_GLIBC/./_}" \
        "$RELEASE_TOOLS/bin/python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir \
        --disable-pip-version-check --quiet -w "$DIST" "$DIST/acp_facade-$version.tar.gz"
}

# The addon (the `dist` profile, zig, glibc 2.17), then the two npm packages around it; then the
# Rust demo agent, built the same way in the same directory (it shares most of the addon's
# dependencies, already built).
release_build_node() {
    local dir="$RELEASE_TARGET/dist-build/node"
    release_phase "node: the addon (cargo-zigbuild, link-time optimisation)"
    PATH="$RELEASE_TOOLS/bin:$PATH" cargo-zigbuild build --locked --profile dist -p acp-facade-node \
        --target "$RELEASE_TRIPLE.$RELEASE_GLIBC" --target-dir "$dir"
    release_phase "node: the npm packages"
    node packaging/npm/pack.mjs "$dir/$RELEASE_TRIPLE/dist/libacp_facade_node.so" \
        "$RELEASE_TARGET/release-work/npm" "$DIST" >/dev/null
    release_build_demo "$dir"
}

# The Rust demo agent as dist/acp-facade-demo: the `dist` profile (stripped), linked by zig
# against glibc 2.17 like the addon, in the build directory $1, with its default features (TLS
# included: `--tls-cert`/`--tls-key` work in the shipped demo as in the tests).
release_build_demo() {
    local dir="$1"
    release_phase "demo: acp-facade-demo (cargo-zigbuild, link-time optimisation)"
    PATH="$RELEASE_TOOLS/bin:$PATH" cargo-zigbuild build --locked --profile dist -p acp-facade-demo \
        --target "$RELEASE_TRIPLE.$RELEASE_GLIBC" --target-dir "$dir"
    cp "$dir/$RELEASE_TRIPLE/dist/acp-facade-demo" "$DIST/acp-facade-demo"
}

# `cargo package` checks each crate's manifest and compiles its packaged sources on their own (the
# runner against the facade as packaged beside it, not as it stands in the checkout).
release_build_crate() {
    local version="$1"
    release_phase "crate: cargo package of both crates (compiles them as packaged)"
    cargo package -p acp-facade -p acp-facade-runner --locked --allow-dirty --quiet
    cp "$RELEASE_TARGET/package/acp-facade-$version.crate" "$RELEASE_TARGET/package/acp-facade-runner-$version.crate" "$DIST/"
}

# The three builds run side by side: the Python and the Node artifacts each end in one long
# single-threaded step (whole-program optimisation into one codegen unit), which the others' work
# fills in on the second core; the crates' check compiles only our two crates (their dependencies
# are cargo's debug builds). Each phase says when it starts (release_phase); each build's output
# goes to a log, printed whole once all are done.
release_build() {
    local version logs build status failed=0
    local -a pids=()
    version="$(release_version)"
    RELEASE_STARTED=$SECONDS
    exec 3>&1
    echo "-- release $version: the python wheel and sdist, the npm packages, the crates and the Rust demo," \
        "side by side; $RELEASE_EXPECTED"
    release_phase "the release tools (pip: maturin, zig, cargo-zigbuild)"
    release_tools
    rm -rf "$DIST"
    mkdir -p "$DIST"
    logs="$RELEASE_TARGET/release-logs"
    mkdir -p "$logs"
    for build in python node crate; do
        (
            set -euo pipefail
            "release_build_$build" "$version"
            release_phase "$build: done"
        ) >"$logs/$build.log" 2>&1 &
        pids+=("$!")
    done
    local i=0
    for build in python node crate; do
        status=0
        wait "${pids[$i]}" || status=$?
        i=$((i + 1))
        echo "-- release $version: $build (exit $status, done by $((SECONDS - RELEASE_STARTED)) s):"
        cat "$logs/$build.log"
        [ "$status" -eq 0 ] || failed=1
    done
    [ "$failed" -eq 0 ] || return 1
    echo "-- release $version built in $((SECONDS - RELEASE_STARTED)) s:"
    ls -l "$DIST"
}

# Every artifact inspected, installed and run in fresh environments without Rust.
release_verify() {
    local started=$SECONDS
    release_tools
    ACP_RELEASE_DIST="$DIST" ACP_RELEASE_WORK="$RELEASE_TARGET/release-verify" \
        "$RELEASE_TOOLS/bin/python" -m pytest packaging/verify -c packaging/verify/pytest.ini \
        --rootdir packaging/verify -p no:cacheprovider -q
    echo "-- release verified in $((SECONDS - started)) s"
}
