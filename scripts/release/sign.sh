#!/usr/bin/env bash
# Signs what a release publishes with a cosign key pair (issue 32, docs/packaging.md "Verify"),
# the one script release.yml (through publish.sh) and test/packaging/signing.test.ts both run:
#   - each FILE (the charts, the binary, SHA256SUMS, the SBOMs): `cosign sign-blob` writes
#     FILE.bundle beside it (a Sigstore bundle: signature + key hint), checked with
#     `cosign verify-blob --key cosign.pub --bundle FILE.bundle FILE`. A chart pushed with
#     `helm push` is that same .tgz as its layer, so the bundle also verifies a `helm pull`.
#   - --image <host>/<owner>/svc@sha256:<digest> (by digest only, never a tag): `cosign sign`
#     stores the signature in the registry beside the image, and --sbom FILE attaches the image's
#     CycloneDX SBOM as a signed attestation (`cosign attest --type cyclonedx`).
#
#   scripts/release/sign.sh --key <cosign.key | env://COSIGN_KEY> [--public-key-out FILE]
#                           [--image REF@sha256:DIGEST [--sbom FILE]] [--ca-file PEM]
#                           [--dry-run] [FILE ...]
#
# COSIGN_PASSWORD holds the private key's password (set it, empty for an unencrypted key: cosign
# would otherwise prompt). Keyless signing needs the public Sigstore services, which these
# machines cannot reach, so nothing goes to a transparency log (--tlog-upload=false) and no
# signing config is fetched (--use-signing-config=false): verifiers pass --insecure-ignore-tlog.
# For the image, REGISTRY_USER and REGISTRY_PASSWORD log cosign in (into a private
# DOCKER_CONFIG removed on exit); --ca-file trusts a private CA for the registry (the tests').
# --public-key-out writes the public half of --key (what the release attaches as cosign.pub).
# --dry-run prints the cosign commands instead of running them (no key, credentials or files
# needed).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
key=""
image=""
sbom=""
ca_file=""
public_out=""
dry=0
files=()
while (($#)); do
  case "$1" in
    --key) key="${2:-}"; shift 2 ;;
    --image) image="${2:-}"; shift 2 ;;
    --sbom) sbom="${2:-}"; shift 2 ;;
    --ca-file) ca_file="${2:-}"; shift 2 ;;
    --public-key-out) public_out="${2:-}"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --) shift; files+=("$@"); break ;;
    -*) echo "sign: unknown argument $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done

fail() { echo "sign: $*" >&2; exit 2; }
[[ -n "$key" ]] || fail '--key is required (a cosign.key file or env://COSIGN_KEY)'
if [[ "$key" == env://* ]]; then
  var="${key#env://}"
  [[ "$var" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || fail "--key $key does not name an environment variable"
  [[ "$dry" == 1 || -n "${!var:-}" ]] || fail "--key $key: \$$var is empty"
elif [[ "$dry" != 1 && ! -f "$key" ]]; then
  fail "--key $key: no such file"
fi
[[ "$dry" == 1 || -n "${COSIGN_PASSWORD+set}" ]] ||
  fail 'COSIGN_PASSWORD must be set (empty for a key without a password)'
if [[ -n "$image" && ! "$image" =~ ^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$ ]]; then
  fail "--image $image is not <host>/<repository>@sha256:<digest> (sign by digest, never a tag)"
fi
[[ -z "$sbom" || -n "$image" ]] || fail '--sbom attests an image: give --image too'
# A dry run may name files that a real run writes first (publish.sh --dry-run packages nothing).
if [[ "$dry" != 1 ]]; then
  [[ -z "$sbom" || -f "$sbom" ]] || fail "--sbom $sbom: no such file"
  [[ -z "$ca_file" || -f "$ca_file" ]] || fail "--ca-file $ca_file: no such file"
  for f in "${files[@]}"; do
    [[ -f "$f" ]] || fail "$f: no such file"
  done
fi
[[ -n "$image" || ${#files[@]} -gt 0 || -n "$public_out" ]] || fail 'nothing to sign: give --image or files'

cosign="${SVC_COSIGN_BIN:-}"
if [[ -z "$cosign" && "$dry" != 1 ]]; then
  cosign="$(bash "$root/.ci/install-cosign" | tail -n 1)"
fi
[[ -n "$cosign" ]] || cosign=cosign

# Runs "$@" (its output to stderr: stdout carries only a dry run's commands), or prints it
# shell-quoted in a dry run.
step() {
  if [[ "$dry" == 1 ]]; then
    printf '%q ' "$@" | sed 's/ $//'
    echo
  else
    "$@" >&2
  fi
}

# No Sigstore services: no transparency log, no signing config or trusted root from TUF.
offline=(--key "$key" --tlog-upload=false --use-signing-config=false --yes)

if [[ -n "$public_out" ]]; then
  if [[ "$dry" == 1 ]]; then
    step "$cosign" public-key --key "$key" --outfile "$public_out"
  else
    "$cosign" public-key --key "$key" --outfile "$public_out.partial" >&2
    mv "$public_out.partial" "$public_out"
  fi
fi

for f in "${files[@]}"; do
  step "$cosign" sign-blob "${offline[@]}" --bundle "$f.bundle" "$f"
  echo "sign: $f.bundle" >&2
done

if [[ -n "$image" ]]; then
  export DOCKER_CONFIG
  DOCKER_CONFIG="$(mktemp -d)"
  trap 'rm -rf "$DOCKER_CONFIG"' EXIT
  registry_opts=()
  [[ -n "$ca_file" ]] && registry_opts=(--registry-cacert "$ca_file")
  if [[ -n "${REGISTRY_USER:-}" && "$dry" != 1 ]]; then
    : "${REGISTRY_PASSWORD:?sign: REGISTRY_PASSWORD is required with REGISTRY_USER}"
    # What `cosign login` would write, without it (it takes no CA file); mode 0600 in a 0700 dir.
    auth="$(printf '%s:%s' "$REGISTRY_USER" "$REGISTRY_PASSWORD" | base64 -w0)"
    (umask 077 && printf '{"auths":{"%s":{"auth":"%s"}}}\n' "${image%%/*}" "$auth" \
      >"$DOCKER_CONFIG/config.json")
  fi
  step "$cosign" sign "${offline[@]}" "${registry_opts[@]}" "$image"
  echo "sign: signed $image" >&2
  if [[ -n "$sbom" ]]; then
    step "$cosign" attest "${offline[@]}" "${registry_opts[@]}" \
      --type cyclonedx --predicate "$sbom" "$image"
    echo "sign: attested $sbom on $image" >&2
  fi
fi
