#!/usr/bin/env bash
# Builds the real Kubernetes parts the tests run against (kube-apiserver, etcd,
# kubectl, helm) from their Go modules, once per machine. Nothing is downloaded
# but Go modules; binaries are cached outside the repo so later runs start at once.
# With --nodes it also builds what real nodes need (kubelet, kube-controller-manager,
# kube-scheduler, containerd 2 and its runc shim, crictl) and installs runc and the
# CNI plugins from Debian's packages when missing.
#
#   test/harness/kube-binaries.sh                    # build what is missing, print the bin dir
#   test/harness/kube-binaries.sh --check            # exit 1 if anything is missing
#   test/harness/kube-binaries.sh --nodes [--check]  # the same, node parts included
set -euo pipefail

nodes=false check=false
for arg in "$@"; do
  case "$arg" in
    --nodes) nodes=true ;;
    --check) check=true ;;
    *) echo "kube-binaries: unknown argument $arg" >&2; exit 2 ;;
  esac
done

KUBE_VERSION="${WARMPOOL_KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${WARMPOOL_ETCD_VERSION:-v3.6.16}"
HELM_VERSION="${WARMPOOL_HELM_VERSION:-v3.22.0}"
CONTAINERD_VERSION="${WARMPOOL_CONTAINERD_VERSION:-v2.4.2}"
CRICTL_VERSION="${WARMPOOL_CRICTL_VERSION:-v1.37.0}"
COREDNS_VERSION="${WARMPOOL_COREDNS_VERSION:-v1.15.0}"
CACHE="${WARMPOOL_CACHE:-$HOME/.cache/warmpool}"
BIN="$CACHE/bin"
mkdir -p "$BIN"

want=(
  "kube-apiserver-$KUBE_VERSION"
  "kubectl-$KUBE_VERSION"
  "etcd-$ETCD_VERSION"
  "helm-$HELM_VERSION-kube$KUBE_VERSION"
)
node_want=(
  "kubelet-$KUBE_VERSION"
  "kube-controller-manager-$KUBE_VERSION"
  "kube-scheduler-$KUBE_VERSION"
  "kube-proxy-$KUBE_VERSION"
  "coredns-$COREDNS_VERSION"
  "containerd-$CONTAINERD_VERSION"
  "containerd-shim-runc-v2-$CONTAINERD_VERSION"
  "ctr-$CONTAINERD_VERSION"
  "crictl-$CRICTL_VERSION"
)
$nodes && want+=("${node_want[@]}")
CNI_BIN=/usr/lib/cni

if $check; then
  for b in "${want[@]}"; do [[ -x "$BIN/$b" ]] || exit 1; done
  if $nodes; then command -v runc >/dev/null && [[ -x $CNI_BIN/bridge ]] || exit 1; fi
  exit 0
fi

command -v go >/dev/null || { echo "kube-binaries: the Go toolchain is required (apt-get install golang or https://go.dev)" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

log() { echo "[kube-binaries $(date +%H:%M:%S)] $*" >&2; }

# A throw-away module that requires $module@$version and pins every sibling
# module the upstream go.mod replaces with a local path (k8s staging, etcd's
# api/client/pkg, ...) to the published version of the same release.
# $3 maps an upstream "./staging/src/k8s.io/api" style path to a version.
wrapper_module() {
  local dir=$1 module=$2 version=$3 sibling_version=$4
  rm -rf "$dir"; mkdir -p "$dir"
  local gomod
  gomod=$(cd "$dir" && go mod download -json "$module@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [[ -f "$gomod" ]] || { log "cannot download $module@$version"; return 1; }
  local goline
  goline=$(grep -m1 '^go ' "$gomod")
  {
    echo "module warmpool.local/build"
    echo
    echo "$goline"
    echo
    grep -m1 '^godebug ' "$gomod" || true
    echo "require $module $version"
    echo
    echo "replace ("
    # Every path replace in upstream's go.mod becomes a module-version replace.
    # A path without the /vN suffix cannot take a vN>=2 version (etcd's root module); it is not built anyway.
    local major=${sibling_version#v}; major=${major%%.*}
    sed 's/^replace[[:space:]]*//' "$gomod" | awk -v ver="$sibling_version" -v major="$major" '/=>/ {
        if ($3 ~ /^\.\.?\//) { if (major < 2 || $1 ~ ("/v" major "$")) print "\t" $1 " => " $1 " " ver }
        else print "\t" $0 }' \
      | grep -v "^\s*$module =>" || true
    echo ")"
  } >"$dir/go.mod"
}

build() {
  local name=$1 module=$2 version=$3 sibling_version=$4 pkg=$5 ldflags=$6 suffix=${7:-} tags=${8:-}
  local out="$BIN/$name-$version$suffix"
  [[ -x "$out" ]] && return 0
  local dir="$CACHE/build/$name"
  log "building $name $version from $module (first time on this machine; a few minutes)"
  local t0=$SECONDS
  wrapper_module "$dir" "$module" "$version" "$sibling_version"
  (cd "$dir" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
  log "built $name in $((SECONDS - t0))s -> $out"
}

kube_ldflags() {
  local v=$KUBE_VERSION major minor
  major=$(echo "${v#v}" | cut -d. -f1); minor=$(echo "${v#v}" | cut -d. -f2)
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local f=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    f+=" -X $p.gitTreeState=clean -X $p.buildDate=$date -X $p.gitCommit=warmpool-build"
  done
  echo "-s -w$f"
}

staging_version="v0.${KUBE_VERSION#v1.}"
build kube-apiserver k8s.io/kubernetes "$KUBE_VERSION" "$staging_version" k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags)"
build kubectl k8s.io/kubernetes "$KUBE_VERSION" "$staging_version" k8s.io/kubernetes/cmd/kubectl "$(kube_ldflags)"
build etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION" go.etcd.io/etcd/server/v3 \
  "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=warmpool-build"
# Helm's own Makefile stamps the Kubernetes version it assumes when no cluster
# is asked (`helm template`, `helm lint`); a plain `go build` leaves v1.20, which
# fails any chart's kubeVersion constraint. Stamp the version the harness runs.
# The binary's name carries that version, so a change rebuilds it.
helm_ldflags() {
  local major minor f="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  major=$(echo "${KUBE_VERSION#v}" | cut -d. -f1); minor=$(echo "${KUBE_VERSION#v}" | cut -d. -f2)
  for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    f+=" -X $p.k8sVersionMajor=$major -X $p.k8sVersionMinor=$minor"
  done
  echo "$f"
}
build helm helm.sh/helm/v3 "$HELM_VERSION" "$HELM_VERSION" helm.sh/helm/v3/cmd/helm "$(helm_ldflags)" "-kube$KUBE_VERSION"

# CoreDNS with only the plugins a test cluster's DNS needs (kubernetes, no
# forward: nothing is resolved outside the cluster). Its main package registers
# every plugin, so the binary is built from a main of our own that picks them.
build_coredns() {
  local out="$BIN/coredns-$COREDNS_VERSION"
  [[ -x "$out" ]] && return 0
  local dir="$CACHE/build/coredns"
  log "building coredns $COREDNS_VERSION (kubernetes plugin only; first time on this machine)"
  local t0=$SECONDS
  wrapper_module "$dir" github.com/coredns/coredns "$COREDNS_VERSION" "$COREDNS_VERSION"
  cat >"$dir/main.go" <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// Upstream's order (core/dnsserver/zdirectives.go), restricted to these plugins.
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "kubernetes", "loadbalance"}
}

func main() { coremain.Run() }
GO
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  log "built coredns in $((SECONDS - t0))s -> $out"
}

if $nodes; then
  # runc and the CNI plugins (bridge, host-local, loopback, portmap) are Debian's.
  command -v runc >/dev/null && [[ -x $CNI_BIN/bridge ]] || {
    log "installing runc and containernetworking-plugins (Debian packages)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runc containernetworking-plugins >/dev/null
  }
  build kubelet k8s.io/kubernetes "$KUBE_VERSION" "$staging_version" k8s.io/kubernetes/cmd/kubelet "$(kube_ldflags)"
  build kube-scheduler k8s.io/kubernetes "$KUBE_VERSION" "$staging_version" k8s.io/kubernetes/cmd/kube-scheduler "$(kube_ldflags)"
  build kube-controller-manager k8s.io/kubernetes "$KUBE_VERSION" "$staging_version" \
    k8s.io/kubernetes/cmd/kube-controller-manager "$(kube_ldflags)"
  build kube-proxy k8s.io/kubernetes "$KUBE_VERSION" "$staging_version" k8s.io/kubernetes/cmd/kube-proxy "$(kube_ldflags)"
  build_coredns
  containerd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
  containerd_ldflags+=" -X github.com/containerd/containerd/v2/version.Revision=warmpool-build"
  # Static (CGO off) and without the snapshotters that need C libraries; overlayfs and native remain.
  build containerd github.com/containerd/containerd/v2 "$CONTAINERD_VERSION" "$CONTAINERD_VERSION" \
    github.com/containerd/containerd/v2/cmd/containerd "$containerd_ldflags" "" "no_btrfs no_devmapper no_zfs"
  build containerd-shim-runc-v2 github.com/containerd/containerd/v2 "$CONTAINERD_VERSION" "$CONTAINERD_VERSION" \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$containerd_ldflags" "" "no_btrfs no_devmapper no_zfs"
  build ctr github.com/containerd/containerd/v2 "$CONTAINERD_VERSION" "$CONTAINERD_VERSION" \
    github.com/containerd/containerd/v2/cmd/ctr "$containerd_ldflags" "" "no_btrfs no_devmapper no_zfs"
  build crictl sigs.k8s.io/cri-tools "$CRICTL_VERSION" "$CRICTL_VERSION" sigs.k8s.io/cri-tools/cmd/crictl \
    "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION"
fi

# The shortest "-v<digit>..." suffix is the version: containerd-shim-runc-v2-v2.4.2 -> containerd-shim-runc-v2.
for b in "${want[@]}"; do ln -sf "$BIN/$b" "$BIN/${b%-v[0-9]*}"; done
echo "$BIN"
