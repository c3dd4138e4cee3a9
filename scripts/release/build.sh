#!/usr/bin/env bash
# Builds everything a release publishes into <out> (default dist/release; issue 17,
# docs/packaging.md "Release"): the single binary svc-linux-x64, the image archive
# svc-image.oci.tar, both charts as .tgz, and SHA256SUMS of the files attached to the GitHub
# release (binary and charts; the image is published by digest in the registry).
#
#   scripts/release/build.sh [--out dist/release] [--tag v0.1.0]
#
# --tag (default $GITHUB_REF_NAME when it is a tag) must equal v<package.json version>.
# Needs root, umoci and apt-get for the image (scripts/build-image.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/dist/release"
tag=""
[[ "${GITHUB_REF_TYPE:-}" == tag ]] && tag="${GITHUB_REF_NAME:-}"
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    *) echo "release build: unknown argument $1" >&2; exit 2 ;;
  esac
done
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")"
if [[ -n "$tag" && "$tag" != "v$version" ]]; then
  echo "release build: tag $tag does not match package.json version $version" >&2
  exit 1
fi

mkdir -p "$out"
cd "$root"
SVC_HELM_BIN="$(bash scripts/release/helm.sh)"
export SVC_HELM_BIN
npm run build:binary -- --out "$out/svc-linux-x64"
bash scripts/build-image.sh --binary "$out/svc-linux-x64" --out "$out/svc-image.oci.tar"
mapfile -t charts < <(bash scripts/release/package-charts.sh --out "$out")
bash scripts/release/checksums.sh "$out" svc-linux-x64 "${charts[@]}"
