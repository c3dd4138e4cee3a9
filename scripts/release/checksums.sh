#!/usr/bin/env bash
# Writes SHA256SUMS beside the release files (issue 17, docs/packaging.md "Release"), in
# `sha256sum` format with bare file names, so a download is checked with
#   sha256sum -c --ignore-missing SHA256SUMS
#
#   scripts/release/checksums.sh <dir> <file in dir>...
set -euo pipefail

(($# >= 2)) || { echo 'usage: checksums.sh <dir> <file>...' >&2; exit 2; }
dir="$1"
shift
names=()
for file in "$@"; do
  name="$(basename "$file")"
  [[ -f "$dir/$name" ]] || { echo "checksums: no $name in $dir" >&2; exit 1; }
  names+=("$name")
done
cd "$dir"
sha256sum -- "${names[@]}" >SHA256SUMS.partial
mv SHA256SUMS.partial SHA256SUMS
cat SHA256SUMS
