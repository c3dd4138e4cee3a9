#!/usr/bin/env bash
# Regenerates testcluster/go/*/go.mod and go.sum from versions.env. Run after changing a version;
# build.sh refuses to build when the modules disagree with versions.env.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

write_module() {
  local dir="$1" path="$2"
  shift 2
  mkdir -p "$dir"
  rm -f "$dir/go.mod" "$dir/go.sum"
  {
    echo '//go:build tools'
    echo
    echo '// Package tools pins the commands build.sh compiles; it is never built itself.'
    echo 'package tools'
    echo
    echo 'import ('
    local cmd
    for cmd in "$@"; do echo "	_ \"$cmd\""; done
    echo ')'
  } >"$dir/tools.go"
  (cd "$dir" && go mod init "$path" >/dev/null 2>&1 && go mod edit -go=1.26.0)
}

kube="$here/go/kube"
write_module "$kube" svc.local/testcluster/kube \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy
(
  cd "$kube"
  go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION"
  # kubernetes' go.mod requires its staging modules at v0.0.0 and replaces them with local
  # paths, which only works inside its own repository; map each to its published tag.
  staging_version="v0.${KUBE_VERSION#v1.}"
  kube_mod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r&&$1~/^k8s.io\//&&$2=="v0.0.0"{print $1}' "$kube_mod" |
    while read -r module; do
      go mod edit -replace="$module=$module@$staging_version"
    done
  go mod tidy
)

write_module "$here/go/etcd" svc.local/testcluster/etcd go.etcd.io/etcd/server/v3
(cd "$here/go/etcd" && go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy)

write_module "$here/go/kwok" svc.local/testcluster/kwok sigs.k8s.io/kwok/cmd/kwok
(cd "$here/go/kwok" && go mod edit -require="sigs.k8s.io/kwok@$KWOK_VERSION" && go mod tidy)

write_module "$here/go/helm" svc.local/testcluster/helm helm.sh/helm/v4/cmd/helm
(cd "$here/go/helm" && go mod edit -require="helm.sh/helm/v4@$HELM_VERSION" && go mod tidy)

# The real node's cluster DNS and NetworkPolicy enforcer (docs/test-cluster-network.md). Neither
# go.mod has replace directives; each gets its own module because their client-go versions differ.
write_module "$here/go/coredns" svc.local/testcluster/coredns github.com/coredns/coredns
(cd "$here/go/coredns" && go mod edit -require="github.com/coredns/coredns@$COREDNS_VERSION" && go mod tidy)

write_module "$here/go/kube-router" svc.local/testcluster/kube-router \
  github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
(
  cd "$here/go/kube-router"
  go mod edit -require="github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION"
  go mod tidy
)
