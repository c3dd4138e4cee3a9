#!/bin/sh
# PgBouncer's start in the svc-system chart (templates/pgbouncer.yaml, docs/operations.md
# "Connection pooling (PgBouncer)"): writes the auth_file from the database Secret's files, the
# same files svc's own Pods read (SVC_DATABASE_CREDENTIALS_DIR), so the passwords have one home
# and an external database's Secret works as the in-chart one does. Then runs pgbouncer in the
# foreground as PID 1. Shell builtins only: any image with /bin/sh and pgbouncer on PATH will do.
set -eu
credentials=/var/run/secrets/svc/database
auth_file=/var/run/pgbouncer/userlist.txt

# One line of a Secret file (svc trims the same files; a password is one line).
value() {
  line=''
  IFS= read -r line <"$credentials/$1" || [ -n "$line" ] || {
    echo "pgbouncer-start: $credentials/$1 is empty" >&2
    exit 1
  }
  printf '%s' "$line"
}

# auth_file quoting: the value in double quotes, a double quote doubled.
quoted() {
  rest=$1
  out=''
  while :; do
    case $rest in
      *'"'*)
        out="$out${rest%%\"*}\"\""
        rest=${rest#*\"}
        ;;
      *)
        out="$out$rest"
        break
        ;;
    esac
  done
  printf '"%s"' "$out"
}

# The two roles whose pools go through the pooler: svc_app (requests, jobs, health) and
# svc_mssp (the system gate). svc_admin and svc_audit only ever connect directly.
# Assignments, so that set -e stops the start on an empty or missing file.
lines=''
for role in app mssp; do
  user=$(value "${role}_user")
  password=$(value "${role}_password")
  lines="$lines$(quoted "$user") $(quoted "$password")
"
done
umask 077
printf '%s' "$lines" >"$auth_file"
exec pgbouncer /etc/pgbouncer/pgbouncer.ini
