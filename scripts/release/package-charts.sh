#!/usr/bin/env bash
# Packages both charts for a release (issue 17, docs/packaging.md "Release"):
# <out>/svc-system-<version>.tgz and <out>/svc-tenant-<version>.tgz, with `helm package`.
#
#   scripts/release/package-charts.sh [--out dist/release]
#
# Refuses when a Chart.yaml's version differs from package.json's (they move together:
# sql/chart-compatibility.yaml keys tenant chart versions by the system version). Symlinks in
# a chart (svc-system's templates/admission → policies/) are packaged as their targets.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/dist/release"
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    *) echo "package-charts: unknown argument $1" >&2; exit 2 ;;
  esac
done

version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")"
helm="$(bash "$root/scripts/release/helm.sh")"
mkdir -p "$out"
for chart in svc-system svc-tenant; do
  have="$(sed -n 's/^version: *//p' "$root/charts/$chart/Chart.yaml")"
  if [[ "$have" != "$version" ]]; then
    echo "package-charts: charts/$chart/Chart.yaml has version $have, package.json $version" >&2
    exit 1
  fi
  "$helm" package "$root/charts/$chart" --destination "$out" >&2
  echo "$out/$chart-$version.tgz"
done
