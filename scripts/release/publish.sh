#!/usr/bin/env bash
# Publishes what scripts/release/build.sh wrote (issues 17 and 32, docs/packaging.md "Release"),
# the one script release.yml and test/packaging/registry.test.ts both run:
#   1. the image archive to <registry>/<owner>/svc:<version> (skopeo copy), and checks that the
#      registry holds it under the archive's own manifest digest;
#   2. svc-tenant, packaged, signed (with a cosign key) and pushed to
#      oci://<registry>/<owner>/charts (helm push); its manifest digest as helm reports it must
#      be what an anonymous reader is served;
#   3. svc-system, packaged now pinning the image digest (image.registry and image.digest, spec
#      §9.3.1) and the tenant package by digest (tenants.packages; package-charts.sh), and
#      SHA256SUMS of the binary, the charts and the SBOMs build.sh wrote;
#   4. with a cosign key, signatures of those files (FILE.bundle) and of the image, with its SBOM
#      attested, in the registry (scripts/release/sign.sh), before svc-system is pushed there;
#   5. a GitHub release v<version> with the binary, the charts, the SBOMs, SHA256SUMS, the
#      bundles, cosign.pub and the notes (gh), unless --no-github-release (a registry-only
#      publish: the tests have no GitHub). A GitHub release must be signed.
#
#   scripts/release/publish.sh --registry <host> --owner <owner> [--dir dist/release]
#                              [--ca-file <pem>] [--cosign-key <cosign.key | env://COSIGN_KEY>]
#                              [--no-github-release] [--dry-run]
#
# The key defaults to env://COSIGN_KEY when COSIGN_KEY is set (COSIGN_PASSWORD its password).
# --dry-run (or PUSH=0) checks the files and prints each command instead of running it; no
# credentials needed. For real, REGISTRY_USER and REGISTRY_PASSWORD log skopeo and helm in
# (into a private auth file removed on exit, never ~/.config or /run), and gh reads GH_TOKEN.
# --ca-file trusts a private CA for the registry (the tests' registry).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="$root/dist/release"
registry=""
owner=""
ca_file=""
cosign_key=""
[[ -n "${COSIGN_KEY:-}" ]] && cosign_key=env://COSIGN_KEY
github=1
push="${PUSH:-1}"
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --registry) registry="$2"; shift 2 ;;
    --owner) owner="$2"; shift 2 ;;
    --ca-file) ca_file="$2"; shift 2 ;;
    --cosign-key) cosign_key="$2"; shift 2 ;;
    --no-github-release) github=0; shift ;;
    --dry-run) push=0; shift ;;
    *) echo "publish: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$registry" && -n "$owner" ]] || { echo 'publish: --registry and --owner are required' >&2; exit 2; }
# OCI repository names are lower case; GitHub owners need not be.
owner="${owner,,}"
if ! [[ "$registry" =~ ^[a-z0-9.-]+(:[0-9]+)?$ && "$owner" =~ ^[a-z0-9._-]+$ ]]; then
  echo "publish: '$registry/$owner' is not a registry host and owner" >&2
  exit 2
fi
if [[ -n "$ca_file" && ! -f "$ca_file" ]]; then
  echo "publish: no CA file $ca_file" >&2
  exit 2
fi
dir="$(cd "$dir" 2>/dev/null && pwd)" || { echo 'publish: no release directory (run scripts/release/build.sh)' >&2; exit 1; }
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")"
tenant_version="$(sed -n 's/^version: *//p' "$root/charts/svc-tenant/Chart.yaml")"
tag="v$version"
charts=("svc-system-$version.tgz" "svc-tenant-$tenant_version.tgz")
# A GitHub release carries the SBOMs and must be signed; a registry-only publish (the tests')
# lists the SBOMs in SHA256SUMS when build.sh wrote them.
required=(svc-linux-x64 svc-image.oci.tar)
sboms=()
for name in sbom-npm.cdx.json sbom-image.cdx.json; do
  if [[ "$github" == 1 ]]; then required+=("$name"); fi
  if [[ "$github" == 1 || -f "$dir/$name" ]]; then sboms+=("$name"); fi
done
for name in "${required[@]}"; do
  [[ -f "$dir/$name" ]] || { echo "publish: no $dir/$name (run scripts/release/build.sh)" >&2; exit 1; }
done
if [[ "$github" == 1 && "$push" != 0 && -z "$cosign_key" ]]; then
  echo 'publish: a release must be signed: set COSIGN_KEY and COSIGN_PASSWORD (or --cosign-key)' >&2
  exit 2
fi

# The digest the pushed image must have: the archive's manifest for <version> (skopeo copies
# an OCI manifest unchanged, so the registry stores the same bytes under the same digest).
expected="$({ tar -xOf "$dir/svc-image.oci.tar" ./index.json || tar -xOf "$dir/svc-image.oci.tar" index.json; } 2>/dev/null | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    const want = process.argv[1];
    const found = (JSON.parse(s).manifests ?? []).filter(
      (m) => m.annotations?.["org.opencontainers.image.ref.name"] === want);
    if (found.length === 1 && /^sha256:[0-9a-f]{64}$/.test(found[0].digest)) console.log(found[0].digest);
  });' "$version" 2>/dev/null || true)"
if [[ -z "$expected" ]]; then
  echo "publish: $dir/svc-image.oci.tar is not an OCI archive holding the image $version" >&2
  exit 1
fi

# Runs "$@", or prints it (shell-quoted) in a dry run.
step() {
  if [[ "$push" == 0 ]]; then
    printf '%q ' "$@" | sed 's/ $//'
    echo
  else
    "$@"
  fi
}

auth="$(mktemp -d)"
trap 'rm -rf "$auth"' EXIT
skopeo_tls=()
helm_tls=()
if [[ -n "$ca_file" ]]; then
  # skopeo trusts every *.crt in a directory; helm takes the file.
  cp "$ca_file" "$auth/ca.crt"
  skopeo_tls=(--dest-cert-dir "$auth")
  helm_tls=(--ca-file "$ca_file")
fi
helm="helm"
if [[ "$push" != 0 ]]; then
  helm="$(bash "$root/scripts/release/helm.sh")"
  : "${REGISTRY_USER:?publish: REGISTRY_USER is required}"
  : "${REGISTRY_PASSWORD:?publish: REGISTRY_PASSWORD is required}"
  export REGISTRY_AUTH_FILE="$auth/auth.json"
  login_tls=()
  [[ -n "$ca_file" ]] && login_tls=(--cert-dir "$auth")
  printf '%s' "$REGISTRY_PASSWORD" |
    skopeo login --authfile "$REGISTRY_AUTH_FILE" "${login_tls[@]}" \
      --username "$REGISTRY_USER" --password-stdin "$registry" >&2
  printf '%s' "$REGISTRY_PASSWORD" |
    "$helm" registry login --registry-config "$auth/helm.json" "${helm_tls[@]}" \
      --username "$REGISTRY_USER" --password-stdin "$registry" >&2
  helm_tls+=(--registry-config "$auth/helm.json")
fi

image="$registry/$owner/svc"
step skopeo copy --all "${skopeo_tls[@]}" --digestfile "$dir/svc-image.digest" \
  "oci-archive:$dir/svc-image.oci.tar:$version" "docker://$image:$version"
if [[ "$push" != 0 ]]; then
  pushed="$(cat "$dir/svc-image.digest")"
  if [[ "$pushed" != "$expected" ]]; then
    echo "publish: the registry holds $image:$version as $pushed, not the archive's $expected" >&2
    exit 1
  fi
fi
echo "publish: image $image:$version@$expected" >&2

# svc-tenant first, signed before it is pushed: svc-system names it by the digest the registry
# stores it under (tenants.packages, SVC_TENANT_PACKAGES), so an install pulls exactly it.
[[ "$push" == 0 ]] || rm -f "$dir/SHA256SUMS" "${charts[@]/#/$dir/}" "$dir"/*.bundle
step bash "$root/scripts/release/package-charts.sh" --out "$dir" --only svc-tenant
sign_opts=()
if [[ -n "$cosign_key" ]]; then
  sign_opts=(--key "$cosign_key")
  [[ -n "$ca_file" ]] && sign_opts+=(--ca-file "$ca_file")
  [[ "$push" == 0 ]] && sign_opts+=(--dry-run)
  bash "$root/scripts/release/sign.sh" "${sign_opts[@]}" "$dir/${charts[1]}"
fi
charts_repo="oci://$registry/$owner/charts"
tenant_repo="$registry/$owner/charts/svc-tenant"
if [[ "$push" == 0 ]]; then
  step "$helm" push "${helm_tls[@]}" "$dir/${charts[1]}" "$charts_repo"
  tenant_digest=DIGEST_OF_THE_PUSHED_SVC_TENANT
else
  pushed_chart="$("$helm" push "${helm_tls[@]}" "$dir/${charts[1]}" "$charts_repo" 2>&1)" || {
    echo "$pushed_chart" >&2
    exit 1
  }
  echo "$pushed_chart" >&2
  tenant_digest="$(sed -n 's/^Digest: \(sha256:[0-9a-f]\{64\}\)$/\1/p' <<<"$pushed_chart")"
  # What an anonymous reader gets for the version: the manifest's own bytes, hashed here.
  inspect_tls=()
  [[ -n "$ca_file" ]] && inspect_tls=(--cert-dir "$auth")
  served="$(skopeo inspect --raw --no-creds "${inspect_tls[@]}" "docker://$tenant_repo:$tenant_version" |
    sha256sum | cut -d' ' -f1)" || {
    echo "publish: cannot read $tenant_repo:$tenant_version back without credentials" >&2
    exit 1
  }
  if [[ -z "$tenant_digest" || "sha256:$served" != "$tenant_digest" ]]; then
    echo "publish: helm pushed svc-tenant as '${tenant_digest}', the registry serves sha256:$served" >&2
    exit 1
  fi
fi
echo "publish: tenant package oci://$tenant_repo@$tenant_digest" >&2

# svc-system and SHA256SUMS are written now, pinning the image and tenant digests just checked.
step bash "$root/scripts/release/package-charts.sh" --out "$dir" --only svc-system \
  --image-registry "$registry/$owner" --image-digest "$expected" \
  --tenant-reference "oci://$tenant_repo@$tenant_digest"
step bash "$root/scripts/release/checksums.sh" "$dir" svc-linux-x64 "${charts[@]}" "${sboms[@]}"
# Signed before svc-system is pushed: nothing unsigned is published after the image.
signed=("$dir/svc-linux-x64" "${charts[@]/#/$dir/}" "${sboms[@]/#/$dir/}" "$dir/SHA256SUMS")
if [[ -n "$cosign_key" ]]; then
  sign_opts+=(--public-key-out "$dir/cosign.pub" --image "$image@$expected")
  [[ -f "$dir/sbom-image.cdx.json" ]] && sign_opts+=(--sbom "$dir/sbom-image.cdx.json")
  unsigned=("${signed[@]}")
  unset 'unsigned[2]'
  bash "$root/scripts/release/sign.sh" "${sign_opts[@]}" "${unsigned[@]}"
fi
step "$helm" push "${helm_tls[@]}" "$dir/${charts[0]}" "$charts_repo"

[[ "$github" == 1 ]] || exit 0
notes="$dir/RELEASE-NOTES.md"
[[ "$push" == 0 ]] || {
  [[ -f "$dir/NOTES.md" ]] && cat "$dir/NOTES.md" && echo
  echo "Image: \`$image:$version@$expected\`"
  echo
  echo "Charts: \`oci://$registry/$owner/charts/svc-system\` $version (pins the image above and the"
  echo "tenant package) and \`oci://$tenant_repo@$tenant_digest\` $tenant_version."
  echo
  echo "Verify downloads with: \`sha256sum -c --ignore-missing SHA256SUMS\`"
  echo
  echo "Verify signatures with cosign (docs/packaging.md \"Verify\"): \`cosign verify --key cosign.pub --insecure-ignore-tlog $image@$expected\`"
} >"$notes"
step gh release create "$tag" --verify-tag --title "svc $version" --notes-file "$notes" \
  "${signed[@]}" "${signed[@]/%/.bundle}" "$dir/cosign.pub"
