#!/usr/bin/env bash
# Prints the path of the helm the release uses (issue 17, docs/packaging.md "Release"): the
# version testcluster/versions.env pins, built from the pinned module in testcluster/go/helm.
#
#   helm="$(bash scripts/release/helm.sh)"
#
# SVC_HELM_BIN wins when set. Otherwise the test cluster's helm when its cache is built
# (testcluster/build.sh), else only helm is built, once per machine, into
# ~/.cache/svc/release/helm-<version> (a minute; the release workflow has no test cluster).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -n "${SVC_HELM_BIN:-}" ]]; then
  echo "$SVC_HELM_BIN"
  exit 0
fi
HELM_VERSION="$(sed -n 's/^HELM_VERSION=//p' "$root/testcluster/versions.env")"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/svc"
for built in "$cache"/testcluster/*/bin/helm "$cache/release/helm-$HELM_VERSION/helm"; do
  if [[ -x "$built" ]] && "$built" version --short 2>/dev/null | grep -qx "$HELM_VERSION.*"; then
    echo "$built"
    exit 0
  fi
done
command -v go >/dev/null || { echo 'helm.sh: go is required to build helm' >&2; exit 1; }
dir="$cache/release/helm-$HELM_VERSION"
mkdir -p "$dir"
tmp="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd "$root/testcluster/go/helm" &&
  CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local go build -trimpath -o "$tmp/helm" \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
    helm.sh/helm/v4/cmd/helm) >&2
mv "$tmp/helm" "$dir/helm"
echo "$dir/helm"
