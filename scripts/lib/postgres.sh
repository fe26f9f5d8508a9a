# A throw-away PostgreSQL server for scripts/test and scripts/bench (sourced:
# `source scripts/lib/postgres.sh`, from the repository root).
#
# `start_postgres [test|durable]` creates a cluster in a new temporary directory, listening on a Unix
# socket in that directory only (no TCP), run by an unprivileged user (`nobody` when this script
# runs as root — PostgreSQL refuses to run as root — else the current user), and exports:
#   ACP_FACADE_TEST_POSTGRES_URL  the connection URL (superuser `acp`, database `postgres`, trust
#                                 authentication: only local processes reach the socket);
#   ACP_FACADE_TEST_POSTGRES_CTL  a command running `pg_ctl` on that cluster as its owner (the
#                                 conformance suite stops and restarts the server with it).
# It installs an EXIT trap that stops the server and removes the directory, whatever happens.
# `test` (the default) turns off fsync (the cluster is thrown away; the tests assert order and
# contents, never crash safety of the server itself); `durable` keeps PostgreSQL's defaults, for
# the benchmark's comparison with the SQLite store's fsync per commit.
# The binaries: `initdb`, `pg_ctl` on PATH, else Debian's /usr/lib/postgresql/*/bin, else (as root
# with apt-get, as in CI) Debian's `postgresql-15` package is installed.

PG_DIR=

find_postgres_bin() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        PG_BIN=$(dirname "$(command -v initdb)")
        return 0
    fi
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            PG_BIN=$dir
            return 0
        fi
    done
    return 1
}

install_postgres() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "== PostgreSQL not found: installing Debian's postgresql-15 ==" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >&2
    fi
    find_postgres_bin || {
        echo "!! PostgreSQL 15 (initdb, pg_ctl) is not installed and cannot be installed here" >&2
        return 1
    }
}

stop_postgres() {
    if [ -n "$PG_DIR" ] && [ -d "$PG_DIR" ]; then
        "$PG_DIR/ctl" stop -m immediate >/dev/null 2>&1 || true
        rm -rf "$PG_DIR"
    fi
    PG_DIR=
}

start_postgres() {
    local mode=${1:-test}
    find_postgres_bin || install_postgres || return 1
    PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/acp-facade-pg.XXXXXX")
    trap stop_postgres EXIT
    local run_as=()
    if [ "$(id -u)" = 0 ]; then
        # The server's user owns the directory; everyone may enter it to reach the socket.
        chown nobody "$PG_DIR"
        run_as=(runuser -u nobody --)
    fi
    chmod 755 "$PG_DIR"
    local settings=(-c listen_addresses= -c "unix_socket_directories=$PG_DIR" -c max_connections=300)
    if [ "$mode" = test ]; then
        settings+=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
    fi
    # The control script: pg_ctl on this cluster, as its owner, waiting for each action.
    {
        echo '#!/bin/sh'
        printf 'exec %s %q -D %q -l %q -w -o %q "$@"\n' "${run_as[*]}" "$PG_BIN/pg_ctl" "$PG_DIR/data" \
            "$PG_DIR/server.log" "${settings[*]}"
    } >"$PG_DIR/ctl"
    chmod 755 "$PG_DIR/ctl"
    "${run_as[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U acp --auth=trust --no-sync --encoding=UTF8 \
        --locale=C >"$PG_DIR/initdb.log" 2>&1 || {
        cat "$PG_DIR/initdb.log" >&2
        return 1
    }
    "$PG_DIR/ctl" start >/dev/null || {
        cat "$PG_DIR/server.log" >&2
        return 1
    }
    export ACP_FACADE_TEST_POSTGRES_URL="postgres://acp@/postgres?host=$PG_DIR"
    export ACP_FACADE_TEST_POSTGRES_CTL="$PG_DIR/ctl"
    echo "== PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') ($mode) on $PG_DIR ==" >&2
}
