#!/usr/bin/env bash
# `npm run image` (issue 17, docs/packaging.md "Image"): the OCI image the charts run, written
# as an OCI archive (dist/svc-image.oci.tar), without a container daemon and without pulling a
# base image. The root filesystem is Debian 12's libc6, libgcc-s1, libstdc++6, ca-certificates,
# tzdata and dash (apt-get download + dpkg-deb -x), the single binary at /usr/local/bin/svc with its
# payload unpacked beside it, and helm; umoci turns it into one layer and sets the config.
#
#   scripts/build-image.sh [--binary dist/svc-linux-x64] [--out dist/svc-image.oci.tar]
#
# Needs root (the layer records file owners: /var/lib/svc belongs to uid 10001), umoci and
# apt-get. helm comes from the test cluster's cache (testcluster/build.sh), or SVC_HELM_BIN.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="$root/dist/svc-linux-x64"
out="$root/dist/svc-image.oci.tar"
while (($#)); do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "build-image: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "build-image: $*" >&2; }
[[ "$(id -u)" == 0 ]] || { log 'run as root: the layer records file owners'; exit 1; }
command -v umoci >/dev/null || { log 'umoci is required (apt-get install umoci)'; exit 1; }
[[ -x "$binary" ]] || { log "no binary at $binary: run npm run build:binary first"; exit 1; }

# The uid the charts run svc as (runAsUser in both charts).
uid=10001
version="$(node -p "require('$root/package.json').version" 2>/dev/null ||
  sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")"
revision="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
source_url="${SVC_IMAGE_SOURCE:-$(git -C "$root" remote get-url origin 2>/dev/null || echo unknown)}"
# Reproducible by default: the commit's time, unless SOURCE_DATE_EPOCH says otherwise.
if [[ -n "${SOURCE_DATE_EPOCH:-}" ]]; then
  created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
else
  created="$(git -C "$root" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null ||
    date -u +%Y-%m-%dT%H:%M:%SZ)"
fi

helm="${SVC_HELM_BIN:-}"
if [[ -z "$helm" ]]; then
  helm="$(bash "$root/testcluster/build.sh" | sed -n 's/^BIN_DIR=//p')/helm"
fi
[[ -x "$helm" ]] || { log "no helm at $helm"; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/svc-image-XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
mkdir -p "$rootfs"

# Debian packages, downloaded once per version into a cache outside the repository.
# dash: PostgreSQL's initdb runs its programs through /bin/sh (the embedded database).
# The rest are the libraries of pg_dump/pg_restore and libpq (`svc db backup`, below).
packages=(libc6 libgcc-s1 libstdc++6 ca-certificates tzdata dash
  libssl3 zlib1g libzstd1 liblz4-1 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0
  libcom-err2 libkeyutils1)
debs="${XDG_CACHE_HOME:-$HOME/.cache}/svc/image-debs"
mkdir -p "$debs"
download() { (cd "$debs" && apt-get download -qq "${packages[@]}" 2>&1); }
if ! download >/dev/null; then
  log 'apt-get download failed; updating the package lists once'
  apt-get update -qq
  download
fi
for name in "${packages[@]}"; do
  want="$(apt-cache policy "$name" | sed -n 's/^  Candidate: //p')"
  deb="$(ls "$debs/${name}_${want//:/%3a}_"*.deb)"
  dpkg-deb -x "$deb" "$rootfs"
  echo "$name=$want" >>"$work/packages.txt"
done
# ca-certificates builds its bundle in a maintainer script, which dpkg-deb -x does not run.
mkdir -p "$rootfs/etc/ssl/certs"
cat "$rootfs"/usr/share/ca-certificates/mozilla/*.crt >"$rootfs/etc/ssl/certs/ca-certificates.crt"
rm -rf "$rootfs"/usr/share/{doc,man,info,lintian,locale}
mkdir -p "$rootfs/bin"
[[ -e "$rootfs/bin/sh" ]] || ln -s dash "$rootfs/bin/sh"
# Mount points a container runtime fills.
install -d -m 0755 "$rootfs/proc" "$rootfs/sys" "$rootfs/dev"

cat >"$rootfs/etc/passwd" <<EOF
root:x:0:0:root:/root:/usr/sbin/nologin
svc:x:$uid:$uid:svc:/var/lib/svc:/usr/sbin/nologin
EOF
cat >"$rootfs/etc/group" <<EOF
root:x:0:
svc:x:$uid:
EOF
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
install -d -m 1777 "$rootfs/tmp"
install -d -m 0700 -o "$uid" -g "$uid" "$rootfs/var/lib/svc"
install -d -m 0755 "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/svc"
install -m 0755 "$binary" "$rootfs/usr/local/bin/svc"
install -m 0755 "$helm" "$rootfs/usr/local/bin/helm"
# pg_dump and pg_restore of the in-chart server's major (18) for `svc db backup`/`restore` and
# the chart's backup CronJob (docs/operations.md "Backup and restore"): Debian 12's are 15, too
# old to dump 18. Their libpq goes where the loader looks by default: their RUNPATH
# ($ORIGIN/../lib) needs /proc to resolve, which a chroot (the image test) does not have.
pg_bin="${SVC_PG_CLIENT_BIN:-$(bash "$root/.ci/install-pg-client" | sed -n 's/^PG_CLIENT_BIN=//p')}"
[[ -x "$pg_bin/pg_dump" && -x "$pg_bin/pg_restore" ]] || { log "no pg_dump/pg_restore in $pg_bin"; exit 1; }
install -m 0755 "$pg_bin/pg_dump" "$pg_bin/pg_restore" "$rootfs/usr/local/bin/"
cp -P "$pg_bin"/../lib/libpq.so* "$rootfs/usr/lib/x86_64-linux-gnu/"
# The payload unpacked at build time: on the read-only root, svc only checks it (sea-runtime).
SVC_RUNTIME_DIR="$rootfs/usr/local/lib/svc/runtime" "$rootfs/usr/local/bin/svc" --help >/dev/null

layout="$work/oci"
image="$layout:svc"
umoci init --layout "$layout"
umoci new --image "$image"
umoci insert --image "$image" "$rootfs" /
umoci config --image "$image" \
  --os linux --architecture amd64 --created "$created" \
  --config.user "$uid:$uid" \
  --config.entrypoint /usr/local/bin/svc --config.cmd serve \
  --config.workingdir /var/lib/svc \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  --config.env SVC_DATA_DIR=/var/lib/svc \
  --config.env SVC_RUNTIME_DIR=/usr/local/lib/svc/runtime \
  --config.env SVC_HOST=0.0.0.0 \
  --config.volume /var/lib/svc --config.volume /tmp \
  --config.exposedports 8080/tcp \
  --config.label "org.opencontainers.image.title=svc" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.source=$source_url" \
  --config.label "org.opencontainers.image.revision=$revision" \
  --config.label "org.opencontainers.image.created=$created" \
  --config.label "org.debian.packages=$(paste -sd, "$work/packages.txt")"
# Tagged with the version too, for `skopeo copy oci-archive:<file>:<version> …` at release.
umoci tag --image "$image" "$version"
umoci gc --layout "$layout"

mkdir -p "$(dirname "$out")"
tar -C "$layout" -cf "$out.partial" .
mv "$out.partial" "$out"
log "wrote $out ($(du -m "$out" | cut -f1) MiB)"
