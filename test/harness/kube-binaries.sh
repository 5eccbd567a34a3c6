#!/usr/bin/env bash
# Builds the real Kubernetes parts the tests run against (kube-apiserver, etcd,
# kubectl, helm) from their Go modules, once per machine. Nothing is downloaded
# but Go modules; binaries are cached outside the repo so later runs start at once.
#
#   test/harness/kube-binaries.sh            # build what is missing, print the bin dir
#   test/harness/kube-binaries.sh --check    # exit 1 if anything is missing
set -euo pipefail

KUBE_VERSION="${WARMPOOL_KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${WARMPOOL_ETCD_VERSION:-v3.6.16}"
HELM_VERSION="${WARMPOOL_HELM_VERSION:-v3.22.0}"
CACHE="${WARMPOOL_CACHE:-$HOME/.cache/warmpool}"
BIN="$CACHE/bin"
mkdir -p "$BIN"

want=(
  "kube-apiserver-$KUBE_VERSION"
  "kubectl-$KUBE_VERSION"
  "etcd-$ETCD_VERSION"
  "helm-$HELM_VERSION-kube$KUBE_VERSION"
)

if [[ "${1:-}" == "--check" ]]; then
  for b in "${want[@]}"; do [[ -x "$BIN/$b" ]] || exit 1; done
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
  local name=$1 module=$2 version=$3 sibling_version=$4 pkg=$5 ldflags=$6 suffix=${7:-}
  local out="$BIN/$name-$version$suffix"
  [[ -x "$out" ]] && return 0
  local dir="$CACHE/build/$name"
  log "building $name $version from $module (first time on this machine; a few minutes)"
  local t0=$SECONDS
  wrapper_module "$dir" "$module" "$version" "$sibling_version"
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg")
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

for b in "${want[@]}"; do ln -sf "$BIN/$b" "$BIN/${b%%-v*}"; done
echo "$BIN"
