#!/usr/bin/env bash
# scripts/with-postgres.sh CMD [ARG...]
#
# Runs CMD with a throwaway PostgreSQL cluster: creates one in a temporary folder owned by the
# `postgres` user (the server refuses to run as root), starts it on a free loopback port with
# trust authentication, exports its URL as DSH_TEST_POSTGRES_URL
# (postgres://postgres@127.0.0.1:PORT/postgres), runs CMD, and stops and removes the cluster
# however CMD ends. Exits with CMD's status; fails loudly (status 1) when the server cannot be
# installed or started.
#
# The server binaries are taken from PG_BIN, else the newest /usr/lib/postgresql/*/bin; when
# there are none and apt-get is available (CI on a fresh machine, as root), the Debian package
# `postgresql` is installed first.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARG...]" >&2
  exit 2
fi

die() { echo "with-postgres: $*" >&2; exit 1; }

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    echo "$PG_BIN"
    return
  fi
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  echo "$newest"
}

bin=$(find_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "with-postgres: no PostgreSQL server found; installing the Debian package" >&2
    apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 \
      || die "cannot install the postgresql package"
    bin=$(find_bin)
  fi
fi
[ -n "$bin" ] && [ -x "$bin/initdb" ] || die "no PostgreSQL server binaries (set PG_BIN)"

# The server runs as `postgres` when we are root, else as ourselves.
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || die "the user postgres does not exist"
  as_server() { runuser -u postgres -- "$@"; }
  owner=postgres
else
  as_server() { "$@"; }
  owner=$(id -un)
fi

cluster=$(mktemp -d "${TMPDIR:-/tmp}/dsh-postgres.XXXXXX")
chown "$owner" "$cluster"
chmod 700 "$cluster"
# As root the server runs as postgres, which must be able to enter every folder above the
# cluster: a TMPDIR of mode 0700 (or one inside /root) is not.
as_server test -x "$cluster" \
  || { rm -rf "$cluster"; die "the user $owner cannot enter $cluster: a folder above it is closed to other users (set TMPDIR to a folder they can enter)"; }
data="$cluster/data"
log="$cluster/server.log"

stop() {
  if [ -f "$data/postmaster.pid" ]; then
    as_server "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$cluster"
}
trap stop EXIT
trap 'exit 130' INT TERM

as_server "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
  --no-sync >"$cluster/initdb.log" 2>&1 \
  || { cat "$cluster/initdb.log" >&2; die "initdb failed"; }

# A free loopback port: ask the kernel for one, then let the server take it (retried on the
# rare race with another process).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

started=
for _ in 1 2 3 4 5; do
  port=$(free_port)
  # fsync off: the cluster is thrown away, and no test crashes the server itself.
  if as_server "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $cluster -c max_connections=300 -c fsync=off -c full_page_writes=off" \
      start >/dev/null 2>&1; then
    started=yes
    break
  fi
done
if [ -z "$started" ]; then
  cat "$log" >&2 2>/dev/null || true
  die "the PostgreSQL server did not start"
fi

export DSH_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 30 || die "the PostgreSQL server does not answer"
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $DSH_TEST_POSTGRES_URL" >&2

set +e
"$@"
status=$?
set -e
exit "$status"
