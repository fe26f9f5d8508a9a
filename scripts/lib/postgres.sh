# A throw-away PostgreSQL server for scripts/test and scripts/bench (sourced:
# `source scripts/lib/postgres.sh`, from the repository root).
#
# `start_postgres [test|durable]` creates a cluster in a new temporary directory, listening on a Unix
# socket in that directory and on TCP at 127.0.0.1 (a free port), run by an unprivileged user
# (`nobody` when this script runs as root — PostgreSQL refuses to run as root — else the current
# user). Over TCP it serves TLS too (and plain connections), with a server certificate for
# `localhost` and `127.0.0.1` signed by a root made here with `openssl` for this run only. It exports:
#   ACP_FACADE_TEST_POSTGRES_URL        the connection URL, over the socket (superuser `acp`,
#                                       database `postgres`, trust authentication: only local
#                                       processes reach the socket and 127.0.0.1);
#   ACP_FACADE_TEST_POSTGRES_TCP_URL    the same server over TCP, `postgres://acp@localhost:PORT/postgres`
#                                       (the TLS tests add their `sslmode`);
#   ACP_FACADE_TEST_POSTGRES_ROOT_CERT  the PEM file of that root, for `sslrootcert`;
#   ACP_FACADE_TEST_POSTGRES_CTL        a command running `pg_ctl` on that cluster as its owner (the
#                                       conformance suite stops and restarts the server with it).
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

# `make_postgres_certificates DIR [OWNER]`: in DIR, a root certificate `root.crt` (its key is
# thrown away once used) and the server's certificate `server.crt` signed by it, for the names
# `localhost` and `127.0.0.1` only, and its key `server.key`, mode 0600 and owned by OWNER when
# given, the server's user (PostgreSQL refuses a key others may read). ECDSA P-256, valid for two days.
make_postgres_certificates() {
    local dir=$1 owner=${2:-}
    mkdir -p "$dir"
    (
        set -e
        cd "$dir"
        openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout root.key \
            -out root.crt -days 2 -subj "/CN=acp-facade test root" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
        openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout server.key \
            -out server.csr -subj "/CN=localhost"
        printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
            "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
        openssl x509 -req -in server.csr -CA root.crt -CAkey root.key -CAcreateserial -out server.crt \
            -days 2 -extfile server.ext
        rm -f root.key root.srl server.csr server.ext
        chmod 600 server.key
        chmod 644 root.crt server.crt
    ) >"$dir/openssl.log" 2>&1 || {
        echo "!! could not make the test server's TLS certificates with openssl:" >&2
        cat "$dir/openssl.log" >&2
        return 1
    }
    if [ -n "$owner" ]; then
        chown "$owner" "$dir/server.key"
    fi
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
    local run_as=() owner=
    if [ "$(id -u)" = 0 ]; then
        # The server's user owns the directory; everyone may enter it to reach the socket.
        chown nobody "$PG_DIR"
        run_as=(runuser -u nobody --)
        owner=nobody
    fi
    chmod 755 "$PG_DIR"
    make_postgres_certificates "$PG_DIR/tls" "$owner" || return 1
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local settings=(-c listen_addresses=127.0.0.1 -c "port=$port" -c "unix_socket_directories=$PG_DIR"
        -c max_connections=300 -c ssl=on -c "ssl_cert_file=$PG_DIR/tls/server.crt"
        -c "ssl_key_file=$PG_DIR/tls/server.key")
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
    export ACP_FACADE_TEST_POSTGRES_URL="postgres://acp@/postgres?host=$PG_DIR&port=$port"
    export ACP_FACADE_TEST_POSTGRES_TCP_URL="postgres://acp@localhost:$port/postgres"
    export ACP_FACADE_TEST_POSTGRES_ROOT_CERT="$PG_DIR/tls/root.crt"
    export ACP_FACADE_TEST_POSTGRES_CTL="$PG_DIR/ctl"
    echo "== PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') ($mode) on $PG_DIR ==" >&2
}
