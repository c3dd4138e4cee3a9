#!/bin/sh
# Entrypoint of the test image localhost/svc-test/postgres:18 (docs/test-images.md): the part of
# the official postgres image's contract the system chart relies on. On an empty PGDATA: initdb
# with superuser POSTGRES_USER and the password from POSTGRES_PASSWORD(_FILE), md5-free
# scram-sha-256 host auth from every address, listen on every address. Then exec the server, so
# it is PID 1 and gets the runtime's signals.
set -eu

# `docker run image -c foo=bar` means `postgres -c foo=bar`, as in the official image.
if [ "${1#-}" != "$1" ]; then
  set -- postgres "$@"
fi

if [ "$1" = postgres ]; then
  : "${PGDATA:=/var/lib/postgresql/data}"
  : "${POSTGRES_USER:=postgres}"
  mkdir -p "$PGDATA" /var/run/postgresql
  # Only the owner can change modes; a volume owned by fsGroup with group rwx is still fine.
  chmod 0700 "$PGDATA" 2>/dev/null || :
  chmod 3775 /var/run/postgresql 2>/dev/null || :

  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
      if [ -n "${POSTGRES_PASSWORD:-}" ]; then
        echo "error: both POSTGRES_PASSWORD and POSTGRES_PASSWORD_FILE are set" >&2
        exit 1
      fi
      # $(cat) drops trailing newlines, as the official image's file_env does.
      POSTGRES_PASSWORD="$(cat "$POSTGRES_PASSWORD_FILE")"
    fi
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
      echo "error: the database is uninitialized and no superuser password is given:" \
        "set POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE" >&2
      exit 1
    fi
    pwfile="/tmp/.pwfile.$$"
    (umask 077 && printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile")
    # Word splitting of POSTGRES_INITDB_ARGS is intended (the official image evals it).
    # shellcheck disable=SC2086
    if ! initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --encoding=UTF8 --locale=C \
      ${POSTGRES_INITDB_ARGS:-} >&2; then
      rm -f "$pwfile"
      exit 1
    fi
    rm -f "$pwfile"
    printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
    printf '\nhost all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >>"$PGDATA/pg_hba.conf"
    echo "PostgreSQL init process complete; ready for start up." >&2
  fi
fi

exec "$@"
