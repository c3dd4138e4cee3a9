#!/usr/bin/env bash
# Builds the test cluster's binaries from the Go modules in testcluster/go into a cache outside
# the repository, keyed by the pinned versions, and prints BIN_DIR=<dir> as its last line.
# A warm cache needs no Go at all; progress goes to stderr so callers can parse stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

# Bump when the build recipe below changes in a way that changes the binaries.
recipe=1
key="$KUBE_VERSION-$(
  cd "$here" && { echo "recipe=$recipe"; cat versions.env go/*/go.mod go/*/go.sum; } |
    sha256sum | cut -c1-12
)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/svc/testcluster"
out="$cache_root/$key"
stamp="$out/complete"

log() { echo "testcluster: $*" >&2; }

if [[ -f "$stamp" ]]; then
  echo "BIN_DIR=$out/bin"
  exit 0
fi

go_minor="$(go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p' || true)"
if [[ -z "$go_minor" || "$go_minor" -lt 26 ]]; then
  echo "testcluster: Go >= 1.26 is required to build the test cluster binaries" \
    "(install it from https://go.dev/dl and put 'go' on PATH)" >&2
  exit 127
fi

mkdir -p "$out/bin" "$out/stage"
# Two callers (a test run and `cluster:up`) may race on a cold cache; the second waits.
exec 9>"$cache_root/build.lock"
flock 9
if [[ -f "$stamp" ]]; then
  echo "BIN_DIR=$out/bin"
  exit 0
fi

# Static binaries (no C toolchain needed); -p 2 keeps a 2-core machine responsive. A read-only
# module graph makes a stale go.sum fail the build instead of rewriting tracked files.
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN=local

module_version() {
  (cd "$here/go/$1" && go list -m -f '{{.Version}}' "$2")
}
for pin in "kube k8s.io/kubernetes $KUBE_VERSION" "etcd go.etcd.io/etcd/server/v3 $ETCD_VERSION" \
  "kwok sigs.k8s.io/kwok $KWOK_VERSION" "helm helm.sh/helm/v4 $HELM_VERSION" \
  "coredns github.com/coredns/coredns $COREDNS_VERSION" \
  "kube-router github.com/cloudnativelabs/kube-router/v2 $KUBE_ROUTER_VERSION"; do
  read -r dir module want <<<"$pin"
  have="$(module_version "$dir" "$module")"
  if [[ "$have" != "$want" ]]; then
    log "testcluster/go/$dir pins $module $have but versions.env says $want; run testcluster/pin.sh"
    exit 1
  fi
done

kube_minor="${KUBE_VERSION#v1.}"
kube_minor="${kube_minor%%.*}"
kube_x=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_x+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor"
  kube_x+=" -X $pkg.gitTreeState=clean"
done

build() {
  local name="$1" dir="$2" pkg="$3" xflags="$4"
  if [[ -x "$out/bin/$name" ]]; then
    log "$name already built"
    return
  fi
  log "building $name ..."
  local start=$SECONDS
  (cd "$here/go/$dir" &&
    go build -p 2 -trimpath -ldflags "-s -w$xflags" -o "$out/bin/$name.partial" "$pkg")
  mv "$out/bin/$name.partial" "$out/bin/$name"
  log "built $name in $((SECONDS - start))s"
}

total=$SECONDS
build kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver "$kube_x"
build kube-controller-manager kube k8s.io/kubernetes/cmd/kube-controller-manager "$kube_x"
build kube-scheduler kube k8s.io/kubernetes/cmd/kube-scheduler "$kube_x"
# The real node (testcluster/node): a kubelet and kube-proxy at the control plane's version.
build kubelet kube k8s.io/kubernetes/cmd/kubelet "$kube_x"
build kube-proxy kube k8s.io/kubernetes/cmd/kube-proxy "$kube_x"
build etcd etcd go.etcd.io/etcd/server/v3 \
  " -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok " -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
build helm helm helm.sh/helm/v4/cmd/helm " -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
# The real node's cluster DNS and NetworkPolicy enforcer (testcluster/node/dns.ts, netpol.ts).
build coredns coredns github.com/coredns/coredns \
  " -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
build kube-router kube-router github.com/cloudnativelabs/kube-router/v2/cmd/kube-router \
  " -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION"

# kwok's stock "fast" stages: nodes turn Ready with lease heartbeats, pods turn Running and Ready.
kwok_dir="$(cd "$here/go/kwok" && go mod download -json sigs.k8s.io/kwok |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
  pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  install -m 0644 "$kwok_dir/kustomize/stage/$stage.yaml" "$out/stage/"
done

cp "$here/versions.env" "$out/versions.env"
touch "$stamp"
log "cold build finished in $((SECONDS - total))s"
echo "BIN_DIR=$out/bin"
