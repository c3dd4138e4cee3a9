#!/usr/bin/env bash
# Packages both charts for a release (issues 17 and 32, docs/packaging.md "Release"), with
# `helm package`: <out>/svc-system-<version>.tgz and <out>/svc-tenant-<its version>.tgz.
#
#   scripts/release/package-charts.sh [--out dist/release]
#                                     [--image-registry <host>/<owner> --image-digest sha256:<hex>]
#
# Each chart has its own version (spec §9.1): svc-system's Chart.yaml version must equal
# package.json's (it is svc's release; sql/chart-compatibility.yaml keys the tenant versions by
# it), svc-tenant's is its own (scripts/charts-release.ts checks that a changed chart was bumped).
#
# With --image-digest (publish.sh, after pushing the image), the packaged svc-system's
# values.yaml says where the image is and pins it by digest (spec §9.3.1): image.registry and
# image.digest, so `helm install` of the published chart runs exactly the pushed image. The
# chart in the repository is not changed. Prints the paths of the two files, system first.
# Symlinks in a chart (svc-system's templates/admission → policies/) are packaged as their targets.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/dist/release"
image_registry=""
image_digest=""
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --image-registry) image_registry="$2"; shift 2 ;;
    --image-digest) image_digest="$2"; shift 2 ;;
    *) echo "package-charts: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ -n "$image_digest$image_registry" ]]; then
  if ! [[ "$image_digest" =~ ^sha256:[0-9a-f]{64}$ ]]; then
    echo "package-charts: --image-digest must be sha256:<64 hex>, got '$image_digest'" >&2
    exit 2
  fi
  # A registry host (with an optional port) and a lower-case path, as an image reference needs.
  if ! [[ "$image_registry" =~ ^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+$ ]]; then
    echo "package-charts: --image-registry must be <host>/<owner>, got '$image_registry'" >&2
    exit 2
  fi
fi

version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")"
system_version="$(sed -n 's/^version: *//p' "$root/charts/svc-system/Chart.yaml")"
if [[ "$system_version" != "$version" ]]; then
  echo "package-charts: charts/svc-system/Chart.yaml has version $system_version, package.json $version" >&2
  exit 1
fi
tenant_version="$(sed -n 's/^version: *//p' "$root/charts/svc-tenant/Chart.yaml")"
if ! [[ "$tenant_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "package-charts: charts/svc-tenant/Chart.yaml has no x.y.z version ('$tenant_version')" >&2
  exit 1
fi

helm="$(bash "$root/scripts/release/helm.sh")"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

system="$root/charts/svc-system"
if [[ -n "$image_digest" ]]; then
  # A copy with symlinks resolved (policies/ lies outside the chart), then the two values
  # rewritten inside the top-level `image:` block only (database.image has a digest too).
  cp -rL "$system" "$work/svc-system"
  system="$work/svc-system"
  awk -v registry="$image_registry" -v digest="$image_digest" '
    /^[^ #]/ { block = $0 }
    block == "image:" && /^  # registry: / { print "  registry: " registry; r++; next }
    block == "image:" && /^  digest: ""$/ { print "  digest: " digest; d++; next }
    { print }
    END { if (r != 1 || d != 1) exit 1 }
  ' "$root/charts/svc-system/values.yaml" >"$system/values.yaml" || {
    echo 'package-charts: charts/svc-system/values.yaml no longer has the image.registry/image.digest lines this script rewrites' >&2
    exit 1
  }
fi
"$helm" package "$system" --destination "$out" >&2
echo "$out/svc-system-$version.tgz"
"$helm" package "$root/charts/svc-tenant" --destination "$out" >&2
echo "$out/svc-tenant-$tenant_version.tgz"
