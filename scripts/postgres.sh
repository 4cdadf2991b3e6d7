#!/usr/bin/env bash
# A private PostgreSQL cluster on loopback for the store tests (issue 13).
#   scripts/postgres.sh start   # installs Debian's postgresql if missing, prints the URL
#   scripts/postgres.sh stop
#   scripts/postgres.sh pause|unpause   # stop and start the server, keeping its data
# PTC_PG_DIR (default /tmp/ptc-pg) holds the cluster; PTC_PG_PORT (default 54329) its port.
# As root, initdb and the server run as the "postgres" user (PostgreSQL refuses root).
set -euo pipefail
dir=${PTC_PG_DIR:-/tmp/ptc-pg}
port=${PTC_PG_PORT:-54329}
url="postgresql://ptc@127.0.0.1:${port}/postgres"

# the newest installed server (a client-only install has no initdb)
bindir() {
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
        if [ -x "$d/initdb" ]; then echo "$d"; return; fi
    done
}

# only ever delete a directory that is empty or holds a cluster of ours
clear_dir() {
    if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/data/PG_VERSION" ]; then
        echo "$0: $dir is not empty and holds no cluster; not deleting it" >&2
        exit 1
    fi
    rm -rf "$dir"
}

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
    if [ -z "$(bindir)" ]; then
        SUDO=""
        if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
        $SUDO apt-get update -qq >&2
        $SUDO apt-get install -y -qq postgresql postgresql-contrib >/dev/null
    fi
    bin=$(bindir)
    if [ -f "$dir/data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        echo "$url"
        exit 0
    fi
    clear_dir
    mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/data" -U ptc -A trust -E UTF8 --no-sync >/dev/null
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
    echo "$url"
    ;;
pause)
    # stop the server but keep the cluster (tests of a server restart mid-run)
    as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
unpause)
    as_owner "$(bindir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
    ;;
stop)
    bin=$(bindir)
    if [ -n "$bin" ] && [ -d "$dir/data" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    clear_dir
    ;;
*)
    echo "usage: $0 start|stop|pause|unpause" >&2
    exit 64
    ;;
esac
