#!/usr/bin/env bash
# Publishes what scripts/release/build.sh wrote (issue 17, docs/packaging.md "Release"):
#   - the image archive to <registry>/<owner>/svc:<version> (skopeo copy),
#   - both charts to oci://<registry>/<owner>/charts (helm push),
#   - a GitHub release v<version> with the binary, the charts and SHA256SUMS (gh).
#
#   scripts/release/publish.sh --registry <host> --owner <owner> [--dir dist/release] [--dry-run]
#
# --dry-run (or PUSH=0) checks the files and prints each command instead of running it; no
# credentials needed. For real, REGISTRY_USER and REGISTRY_PASSWORD log skopeo and helm in,
# and gh reads GH_TOKEN.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="$root/dist/release"
registry=""
owner=""
push="${PUSH:-1}"
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --registry) registry="$2"; shift 2 ;;
    --owner) owner="$2"; shift 2 ;;
    --dry-run) push=0; shift ;;
    *) echo "publish: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$registry" && -n "$owner" ]] || { echo 'publish: --registry and --owner are required' >&2; exit 2; }
# OCI repository names are lower case; GitHub owners need not be.
owner="${owner,,}"
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")"
tag="v$version"
charts=("svc-system-$version.tgz" "svc-tenant-$version.tgz")
for name in svc-linux-x64 svc-image.oci.tar SHA256SUMS "${charts[@]}"; do
  [[ -f "$dir/$name" ]] || { echo "publish: no $dir/$name (run scripts/release/build.sh)" >&2; exit 1; }
done
(cd "$dir" && sha256sum --quiet -c SHA256SUMS >&2) || { echo 'publish: SHA256SUMS does not verify' >&2; exit 1; }

# Runs "$@", or prints it (shell-quoted) in a dry run.
step() {
  if [[ "$push" == 0 ]]; then
    printf '%q ' "$@" | sed 's/ $//'
    echo
  else
    "$@"
  fi
}

helm="helm"
if [[ "$push" != 0 ]]; then
  helm="$(bash "$root/scripts/release/helm.sh")"
  : "${REGISTRY_USER:?publish: REGISTRY_USER is required}"
  : "${REGISTRY_PASSWORD:?publish: REGISTRY_PASSWORD is required}"
  printf '%s' "$REGISTRY_PASSWORD" | skopeo login --username "$REGISTRY_USER" --password-stdin "$registry"
  printf '%s' "$REGISTRY_PASSWORD" | "$helm" registry login --username "$REGISTRY_USER" --password-stdin "$registry"
fi

image="$registry/$owner/svc"
step skopeo copy --all "oci-archive:$dir/svc-image.oci.tar:$version" "docker://$image:$version"
for chart in "${charts[@]}"; do
  step "$helm" push "$dir/$chart" "oci://$registry/$owner/charts"
done
step gh release create "$tag" --verify-tag --title "svc $version" --notes \
  "Image: $image:$version. Charts: oci://$registry/$owner/charts/svc-system and svc-tenant, version $version. Verify downloads with: sha256sum -c --ignore-missing SHA256SUMS" \
  "$dir/svc-linux-x64" "${charts[@]/#/$dir/}" "$dir/SHA256SUMS"
