#!/usr/bin/env bash
# Builds what a release publishes into <out> (default dist/release; issues 17 and 32,
# docs/packaging.md "Release"): the single binary svc-linux-x64, the image archive
# svc-image.oci.tar, CycloneDX SBOMs of the npm dependency tree and of the image
# (sbom-npm.cdx.json, sbom-image.cdx.json; scripts/release/sbom.ts) and the release notes NOTES.md.
# The charts are packaged by publish.sh, after the image is pushed: the published svc-system
# pins the pushed image's digest (spec §9.3.1).
#
#   scripts/release/build.sh [--out dist/release] [--tag v0.2.0] [--unrecorded-ok]
#
# --tag (default $GITHUB_REF_NAME when it is a tag) must equal v<package.json version>. Both
# charts' current versions must be frozen in charts/released.yaml
# (`scripts/charts-release.ts check --release`); --unrecorded-ok skips that for a build that is
# not a release (test/packaging/registry.test.ts publishes to a throwaway registry).
# Needs root, umoci and apt-get for the image (scripts/build-image.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/dist/release"
tag=""
recorded=1
[[ "${GITHUB_REF_TYPE:-}" == tag ]] && tag="${GITHUB_REF_NAME:-}"
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --unrecorded-ok) recorded=0; shift ;;
    *) echo "release build: unknown argument $1" >&2; exit 2 ;;
  esac
done
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")"
if [[ -n "$tag" && "$tag" != "v$version" ]]; then
  echo "release build: tag $tag does not match package.json version $version" >&2
  exit 1
fi

cd "$root"
node=(node --import tsx)
if [[ "$recorded" == 1 ]]; then
  "${node[@]}" scripts/charts-release.ts check --release
fi
mkdir -p "$out"
npm run build:binary -- --out "$out/svc-linux-x64"
bash scripts/build-image.sh --binary "$out/svc-linux-x64" --out "$out/svc-image.oci.tar"
"${node[@]}" scripts/release/sbom.ts npm --out "$out/sbom-npm.cdx.json" >/dev/null
"${node[@]}" scripts/release/sbom.ts image --image "$out/svc-image.oci.tar" \
  --out "$out/sbom-image.cdx.json" >/dev/null
"${node[@]}" scripts/release/notes.ts >"$out/NOTES.md.partial"
mv "$out/NOTES.md.partial" "$out/NOTES.md"
