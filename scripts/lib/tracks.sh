# Runs independent parts of the test command side by side (sourced by scripts/test).
#
# run_tracks NAME...: runs each shell function NAME in a background subshell of its own (errexit
# on), its output into a log of its own under $TRACK_LOGS, and waits for all of them. Each log is
# then printed whole, in the order the names were given, so the output reads as if the tracks had
# run one after another; a track that failed is named last, and the call fails. Nothing is killed
# early: a failing track does not hide the results of the others.
#
# `section NAME` prints a heading with the minutes and seconds since the test command started.

TRACK_LOGS="${TRACK_LOGS:-${CARGO_TARGET_DIR:-$PWD/target}/test-logs}"
TEST_STARTED=${TEST_STARTED:-$SECONDS}

section() {
    local elapsed=$((SECONDS - TEST_STARTED))
    printf '== %s (at %dm%02ds) ==\n' "$1" $((elapsed / 60)) $((elapsed % 60))
}

run_tracks() {
    local name pid status failed=()
    local -a pids=()
    mkdir -p "$TRACK_LOGS"
    for name in "$@"; do
        (set -euo pipefail; "$name") >"$TRACK_LOGS/$name.log" 2>&1 &
        pids+=("$!")
    done
    local i=0
    for name in "$@"; do
        pid=${pids[$i]}
        i=$((i + 1))
        status=0
        wait "$pid" || status=$?
        printf -- '---- track %s: exit %d (log: %s) ----\n' "$name" "$status" "$TRACK_LOGS/$name.log"
        cat "$TRACK_LOGS/$name.log"
        [ "$status" -eq 0 ] || failed+=("$name")
    done
    if [ "${#failed[@]}" -gt 0 ]; then
        echo "!! failed: ${failed[*]}" >&2
        return 1
    fi
}
