#!/usr/bin/env bash
# The README's quick start on a clean Debian 12, in one command (issue 16).
#
# Builds a minimal Debian 12 (bookworm) chroot with debootstrap, gives it what a newcomer's
# machine has per the README (Node 20 and npm as on this machine, git, curl, ca-certificates;
# Go under /usr/local/go for `npm run demo`), clones the repository into /root/svc (mode 700)
# and runs the quick start exactly as written, as root:
#   1. `npm install && npm start`: waits for /healthz, signs in with the printed admin
#      password, then Ctrl-C (SIGINT to the process group) and checks nothing is left running;
#   2. `npm run demo`: waits for `demo: ready`, fetches the acme portal, Ctrl-C, same check.
# `npm test` is not run (too slow for a 2-core machine); `.ci/run`'s package step is dry-run.
#
# Needs root, debootstrap, and the apt mirror this machine is configured with (read from
# /etc/apt/sources.list.d/debian.sources, never written anywhere else). The chroot gets this
# machine's resolver, apt settings, extra CA certificates, npm configuration and Go proxy
# settings so its package clients reach their registries as here.
#
# Time on 2 cores (measured, docs/testing.md): debootstrap 24 s, chroot packages 8 s, npm
# install 20 s, first start 10 s; the first `npm run demo` builds the Kubernetes binaries from
# Go sources (10-35 min), later ones are ready in ~30 s.
# Idempotent: an existing chroot and its packages are reused; the checkout is cloned afresh on
# every run. `--cold` also empties the chroot's npm, Go and svc caches first.
#
# usage: scripts/clean-machine-trial.sh [--cold] [--commit <sha>] [--skip-demo] [--build-only]
#   --build-only prepares the chroot and stops before the clone.
#   DEB12_ROOT (default /srv/deb12) is where the chroot lives; logs go to $DEB12_ROOT/trial/.
set -euo pipefail

ROOT="${DEB12_ROOT:-/srv/deb12}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOGS="$ROOT/trial"
PORT=8080
cold=false
commit=""
demo=true
build_only=false
while (($#)); do
  case "$1" in
  --cold) cold=true ;;
  --commit) commit="$2" && shift ;;
  --skip-demo) demo=false ;;
  --build-only) build_only=true ;;
  *) echo "usage: $0 [--cold] [--commit <sha>] [--skip-demo] [--build-only]" >&2 && exit 2 ;;
  esac
  shift
done

[[ $(id -u) == 0 ]] || { echo "clean-machine-trial: run as root (chroot, mounts)" >&2 && exit 1; }
started=$SECONDS
step() { printf '\n== %s (+%ss)\n' "$1" "$((SECONDS - started))"; }
timed() {
  local what="$1" t=$SECONDS
  shift
  "$@"
  echo "TIME $what $((SECONDS - t))s" | tee -a "$LOGS/times"
}

# A shell inside the chroot as a newcomer's root login would have it: a clean environment,
# ~/.profile read, plus the CA variables this machine exports to every process.
in_chroot() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt SSL_CERT_DIR=/etc/ssl/certs \
    /bin/bash -lc "$1"
}

# Every process whose root directory is the chroot: what must be gone after Ctrl-C.
chroot_pids() {
  local p
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/root" 2>/dev/null)" == "$ROOT" ]] && echo "${p#/proc/}"
  done
  return 0
}

mount_all() {
  local m
  for m in proc sys dev dev/pts; do
    mkdir -p "$ROOT/$m"
    mountpoint -q "$ROOT/$m" && continue
    case "$m" in
    proc) mount -t proc proc "$ROOT/proc" ;;
    sys) mount -t sysfs sys "$ROOT/sys" ;;
    dev) mount --bind /dev "$ROOT/dev" ;;
    dev/pts) mount -t devpts devpts "$ROOT/dev/pts" -o newinstance,ptmxmode=0666 ;;
    esac
  done
}
unmount_all() {
  local m
  for m in dev/pts dev sys proc; do
    if mountpoint -q "$ROOT/$m"; then umount -R "$ROOT/$m"; fi
  done
}

build_chroot() {
  step 'debootstrap (minbase bookworm)'
  mkdir -p "$ROOT"
  if [[ ! -x "$ROOT/usr/bin/apt-get" ]]; then
    command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
    local mirror
    mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
    mkdir -p "$LOGS"
    timed debootstrap debootstrap --variant=minbase bookworm "$ROOT" "$mirror" >"$LOGS/debootstrap.log"
  fi
  mkdir -p "$LOGS"
  mount_all

  step 'resolver, apt, CA certificates and package-client settings as on this machine'
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  rm -f "$ROOT/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/debian.sources "$ROOT/etc/apt/sources.list.d/"
  cp /etc/apt/apt.conf.d/99artifact-registry "$ROOT/etc/apt/apt.conf.d/" 2>/dev/null || true
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/" 2>/dev/null || true

  step 'Debian packages: ca-certificates git curl python3 (nodejs depends on python3)'
  if ! in_chroot 'command -v git && command -v curl && command -v python3' >/dev/null 2>&1; then
    timed apt in_chroot 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends ca-certificates git curl python3' \
      >"$LOGS/apt.log" 2>&1
  fi
  in_chroot 'update-ca-certificates' >/dev/null

  step "Node and npm: this machine's nodejs package (its apt source is not reachable) and npm"
  if [[ ! -x "$ROOT/usr/bin/node" ]]; then
    # The files of the installed nodejs package plus the npm that replaced its bundled one.
    { dpkg -L nodejs | while read -r f; do [[ -f "$f" || -L "$f" ]] && echo "$f"; done
      printf "%s\n" /usr/lib/node_modules/npm /usr/bin/npm /usr/bin/npx; } | sed "s|^/||" |
      tar -C / -cf - --files-from=- | tar -C "$ROOT" -xf -
  fi
  mkdir -p "$ROOT/usr/etc"
  cp /usr/etc/npmrc "$ROOT/usr/etc/npmrc" 2>/dev/null || true
  cp /root/.npmrc "$ROOT/root/.npmrc" 2>/dev/null || true

  step 'Go (/usr/local/go, its go.env names the module proxy) and ~/.config/go/env'
  if [[ ! -x "$ROOT/usr/local/go/bin/go" ]]; then
    tar -C /usr/local -cf - go | tar -C "$ROOT/usr/local" -xf -
  fi
  mkdir -p "$ROOT/root/.config/go"
  cp /root/.config/go/env "$ROOT/root/.config/go/env" 2>/dev/null || true
  # As go.dev/doc/install says: put Go on PATH in the profile.
  grep -q /usr/local/go/bin "$ROOT/root/.profile" ||
    echo 'export PATH=$PATH:/usr/local/go/bin' >>"$ROOT/root/.profile"
  chmod 700 "$ROOT/root"
  in_chroot 'node -v; npm -v; git --version; go version'
}

clone() {
  step 'clone: bare mirror of the repository, then `git clone` inside the chroot'
  if [[ -d "$ROOT/srv/svc.git" ]]; then
    git -C "$ROOT/srv/svc.git" fetch -q "$REPO" "+refs/heads/*:refs/heads/*"
  else
    git clone -q --bare "$REPO" "$ROOT/srv/svc.git"
  fi
  in_chroot 'cd /root && rm -rf svc && git clone -q /srv/svc.git svc'
  if [[ -n "$commit" ]]; then
    in_chroot "cd /root/svc && git checkout -q $commit"
  fi
  in_chroot 'git -C /root/svc log -1 --format="%h %ad %s" --date=iso | cut -c1-100'
  if $cold; then
    in_chroot 'rm -rf /root/.npm /root/.cache /root/go /var/lib/svc'
  fi
}

wait_port_free() {
  local i
  for i in $(seq 1 60); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return 0; fi
    echo "port $PORT is in use; waiting"
    sleep 10
  done
  echo "port $PORT stayed busy" >&2 && return 1
}

# Starts a command in its own session (its process group is what Ctrl-C would signal).
start_bg() {
  local log="$1" cmd="$2"
  setsid bash -c "$(declare -f in_chroot); ROOT=$ROOT; in_chroot '$cmd'" >"$log" 2>&1 </dev/null &
  echo $!
}

wait_for_line() {
  local log="$1" pattern="$2" limit="$3" pid="$4" t=$SECONDS
  until grep -q "$pattern" "$log"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "exited before '$pattern':" >&2 && tail -30 "$log" >&2 && return 1
    fi
    ((SECONDS - t < limit)) || { echo "no '$pattern' after ${limit}s" >&2 && return 1; }
    sleep 2
  done
}

ctrl_c() {
  local pid="$1" what="$2" t=$SECONDS
  kill -INT -- "-$pid"
  while kill -0 "$pid" 2>/dev/null && ((SECONDS - t < 60)); do sleep 1; done
  sleep 2
  local left
  left="$(chroot_pids)"
  if [[ -n "$left" ]]; then
    echo "DEFECT: after Ctrl-C of $what these processes are still running:" >&2
    ps -o pid,ppid,args -p "$(echo "$left" | paste -sd,)" >&2
    return 1
  fi
  echo "TIME $what-stop $((SECONDS - t))s (nothing left running)" | tee -a "$LOGS/times"
}

trial_start() {
  step 'npm install'
  wait_port_free
  timed npm-install in_chroot 'cd /root/svc && npm install' >"$LOGS/npm-install.log" 2>&1 ||
    { tail -40 "$LOGS/npm-install.log" && return 1; }

  step 'npm start'
  local pid t=$SECONDS
  pid="$(start_bg "$LOGS/npm-start.log" 'cd /root/svc && npm start')"
  wait_for_line "$LOGS/npm-start.log" 'svc listening' 300 "$pid"
  echo "TIME first-start $((SECONDS - t))s" | tee -a "$LOGS/times"
  in_chroot "curl -sS localhost:$PORT/healthz" && echo
  local password
  password="$(awk '/created platform_admin/ {getline; getline; print $1; exit}' "$LOGS/npm-start.log")"
  [[ -n "$password" ]] || { echo 'DEFECT: no admin password printed' >&2 && return 1; }
  in_chroot "curl -sS -o /dev/null -w 'login %{http_code}\n' -H 'content-type: application/json' \
    -H 'origin: http://localhost:$PORT' \
    -d '{\"email\":\"admin@localhost\",\"password\":\"$password\"}' localhost:$PORT/api/auth/login"
  ctrl_c "$pid" npm-start
}

trial_demo() {
  step 'npm run demo'
  wait_port_free
  local pid t=$SECONDS
  pid="$(start_bg "$LOGS/npm-demo.log" 'cd /root/svc && npm run demo')"
  wait_for_line "$LOGS/npm-demo.log" 'demo: ready' 3600 "$pid"
  echo "TIME demo-ready $((SECONDS - t))s" | tee -a "$LOGS/times"
  in_chroot "curl -sS -o /dev/null -w 'acme portal %{http_code}\n' \
    -H 'Host: acme.localhost:$PORT' localhost:$PORT/"
  ctrl_c "$pid" npm-demo
}

trial_ci_packages() {
  step ".ci/run's first step (system packages), dry run"
  in_chroot "apt-get install -s -qq postgresql-client openssl haproxy chromium python3-venv \
    | grep -c '^Inst' | sed 's/^/packages it would install: /'"
}

trap unmount_all EXIT
build_chroot
if $build_only; then exit 0; fi
clone
trial_start
if $demo; then trial_demo; fi
trial_ci_packages
step "done; chroot $(du -sh "$ROOT" 2>/dev/null | cut -f1) at $ROOT, logs in $LOGS"
