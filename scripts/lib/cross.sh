# Cross-checking for other platforms with zig as the C compiler (sourced by scripts/check-targets,
# from the repository root).
#
# `cargo check` of another target still runs the build scripts of C dependencies (rusqlite's
# bundled SQLite, ring), which compile C for that target: zig (PyPI's `ziglang`, pinned in
# packaging/requirements-cross.txt) is a C compiler for all of them. Everything lives under
# $CARGO_TARGET_DIR: the venv holding zig, zig's caches and the wrappers the `cc` crate is given
# through CC_<target> and AR_<target>.

CROSS_TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
case "$CROSS_TARGET" in /*) ;; *) CROSS_TARGET="$PWD/$CROSS_TARGET" ;; esac
CROSS_TOOLS="$CROSS_TARGET/cross-tools"

# The Rust targets the crates are checked for, each with zig's name for the same platform.
CROSS_TARGETS=(
    "x86_64-pc-windows-gnu x86_64-windows-gnu"
    "aarch64-apple-darwin aarch64-macos"
    "x86_64-apple-darwin x86_64-macos"
    "aarch64-unknown-linux-gnu aarch64-linux-gnu"
    "x86_64-unknown-linux-musl x86_64-linux-musl"
    "aarch64-unknown-linux-musl aarch64-linux-musl"
)

# Installs what the checks need: the Rust standard library of every target (rustup) and zig in
# its own venv. Says what it does; fails loudly.
cross_tools() {
    local entry missing=()
    local installed
    installed="$(rustup target list --installed)"
    for entry in "${CROSS_TARGETS[@]}"; do
        set -- $entry
        grep -qx "$1" <<<"$installed" || missing+=("$1")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "-- rustup target add ${missing[*]}"
        rustup target add "${missing[@]}"
    fi
    if [ ! -x "$CROSS_TOOLS/bin/python" ]; then
        echo "-- a venv for zig: $CROSS_TOOLS"
        python3 -m venv "$CROSS_TOOLS"
    fi
    "$CROSS_TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check -r packaging/requirements-cross.txt
    export ZIG_GLOBAL_CACHE_DIR="$CROSS_TARGET/cross-cache/zig"
    export ZIG_LOCAL_CACHE_DIR="$ZIG_GLOBAL_CACHE_DIR"
}

# Writes the wrappers for one target (Rust's name $1, zig's $2) and prints the environment that
# hands them to the `cc` crate, one VAR=VALUE a line. The compiler wrapper drops the
# `--target=<Rust triple>` the `cc` crate adds for a clang-like compiler: zig takes its own
# `-target`, and does not know every Rust triple.
cross_env() {
    local rust="$1" zig="$2" dir="$CROSS_TOOLS/wrappers"
    local var="${rust//-/_}"
    mkdir -p "$dir"
    cat >"$dir/cc-$rust" <<EOF
#!/usr/bin/env bash
args=()
for arg in "\$@"; do
    case "\$arg" in --target=*) ;; *) args+=("\$arg") ;; esac
done
exec "$CROSS_TOOLS/bin/python" -m ziglang cc -target $zig "\${args[@]}"
EOF
    cat >"$dir/ar" <<EOF
#!/usr/bin/env bash
exec "$CROSS_TOOLS/bin/python" -m ziglang ar "\$@"
EOF
    chmod +x "$dir/cc-$rust" "$dir/ar"
    echo "CC_$var=$dir/cc-$rust"
    echo "AR_$var=$dir/ar"
}
