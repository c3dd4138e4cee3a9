#!/usr/bin/env bash
# Packages both charts for a release (issues 17 and 32, docs/packaging.md "Release"), with
# `helm package`: <out>/svc-system-<version>.tgz and <out>/svc-tenant-<its version>.tgz.
#
#   scripts/release/package-charts.sh [--out dist/release] [--only svc-system|svc-tenant]
#                                     [--image-registry <host>/<owner> --image-digest sha256:<hex>]
#                                     [--tenant-reference oci://<host>/<owner>/charts/svc-tenant@sha256:<hex>]
#
# Each chart has its own version (spec §9.1): svc-system's Chart.yaml version must equal
# package.json's (it is svc's release; sql/chart-compatibility.yaml keys the tenant versions by
# it), svc-tenant's is its own (scripts/charts-release.ts checks that a changed chart was bumped).
#
# With --image-digest (publish.sh, after pushing the image), the packaged svc-system's
# values.yaml says where the image is and pins it by digest (spec §9.3.1): image.registry and
# image.digest, so `helm install` of the published chart runs exactly the pushed image. The
# chart in the repository is not changed. With --tenant-reference (publish.sh, after pushing
# svc-tenant), its tenants.packages names that package by digest, so the installed svc pulls
# exactly the published tenant package (SVC_TENANT_PACKAGES). --only packages one chart.
# Prints the paths of the files written, system first.
# Symlinks in a chart (svc-system's templates/admission → policies/) are packaged as their targets.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/dist/release"
image_registry=""
image_digest=""
tenant_reference=""
only=""
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --image-registry) image_registry="$2"; shift 2 ;;
    --image-digest) image_digest="$2"; shift 2 ;;
    --tenant-reference) tenant_reference="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
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
if ! [[ "$only" =~ ^(|svc-system|svc-tenant)$ ]]; then
  echo "package-charts: --only takes svc-system or svc-tenant, got '$only'" >&2
  exit 2
fi
# The orchestrator's own check (contracts/tenant-packages.ts TENANT_PACKAGE_PATTERN), in bash.
label='[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?'
if [[ -n "$tenant_reference" ]] &&
  ! [[ "$tenant_reference" =~ ^oci://($label\.)*$label(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*/svc-tenant@sha256:[0-9a-f]{64}$ ]]; then
  echo "package-charts: --tenant-reference must be oci://<host>/<path>/svc-tenant@sha256:<64 hex>, got '$tenant_reference'" >&2
  exit 2
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
if [[ -n "$image_digest$tenant_reference" ]]; then
  # A copy with symlinks resolved (policies/ lies outside the chart), then values rewritten
  # inside their top-level block only (database.image has a digest too): image.registry and
  # image.digest, tenants.packages.
  cp -rL "$system" "$work/svc-system"
  system="$work/svc-system"
  awk -v registry="$image_registry" -v digest="$image_digest" -v tenant="$tenant_reference" '
    /^[^ #]/ { block = $0 }
    digest != "" && block == "image:" && /^  # registry: / { print "  registry: " registry; r++; next }
    digest != "" && block == "image:" && /^  digest: ""$/ { print "  digest: " digest; d++; next }
    tenant != "" && block == "tenants:" && /^  packages: \[\]$/ {
      print "  packages:"; print "    - " tenant; t++; next
    }
    { print }
    END {
      if (digest != "" && (r != 1 || d != 1)) exit 1
      if (tenant != "" && t != 1) exit 1
    }
  ' "$root/charts/svc-system/values.yaml" >"$system/values.yaml" || {
    echo 'package-charts: charts/svc-system/values.yaml no longer has the image.registry/image.digest or tenants.packages lines this script rewrites' >&2
    exit 1
  }
fi
if [[ "$only" != svc-tenant ]]; then
  "$helm" package "$system" --destination "$out" >&2
  echo "$out/svc-system-$version.tgz"
fi
if [[ "$only" != svc-system ]]; then
  "$helm" package "$root/charts/svc-tenant" --destination "$out" >&2
  echo "$out/svc-tenant-$tenant_version.tgz"
fi
