#!/bin/sh
# Builds the real control plane for the end-to-end tests from the Go module proxy:
#   tests/e2e/go/build.sh OUT MINOR
# OUT/kubernetes-MINOR/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl},
# OUT/etcd/etcd and OUT/kwok/kwok. Each set is built once per content of its wrapper
# module's go.mod and go.sum, into ~/.cache/topospread/control-plane/NAME-DIGEST, so a warm
# `make control-plane` (a fresh clone included) costs seconds; after a change Go's own
# build cache makes the rebuild cost what changed.
set -eu
out=$1
minor=$2
here=$(cd "$(dirname "$0")" && pwd)
export CGO_ENABLED=0 GOFLAGS=-trimpath

cache=${TOPOSPREAD_GO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/topospread/control-plane}
digest() { cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -c1-16; }

# build MODULE_DIR NAME BINARY LDFLAGS PKG...: the binaries land in a cache directory named
# by the wrapper module's digest (a fresh clone reuses them), linked as OUT/NAME. BINARY
# names a lone package's binary ("" keeps each command's own name).
build() {
  mod=$1 name=$2 binary=$3 ldflags=$4; shift 4
  dest=$cache/$name-$(digest "$mod")
  if [ -f "$dest/.complete" ]; then
    echo "control plane: $name is up to date ($dest)"
  else
    echo "control plane: building $* into $dest"
    rm -rf "$dest" && mkdir -p "$dest"
    start=$(date +%s)
    (cd "$mod" && go build -tags=selinux,notest -ldflags "-s -w $ldflags" -o "$dest/$binary" "$@")
    touch "$dest/.complete"
    echo "control plane: $name built in $(( $(date +%s) - start )) s"
  fi
  mkdir -p "$out"
  rm -rf "${out:?}/$name"
  ln -s "$dest" "$out/$name"
}

kmod=$here/kubernetes-$minor
[ -d "$kmod" ] || { echo "no wrapper module for Kubernetes $minor (have: $(ls -d "$here"/kubernetes-* | sed 's/.*kubernetes-//' | tr '\n' ' '))" >&2; exit 2; }
version=$(sed -n 's/^\tk8s\.io\/kubernetes \(v[0-9.]*\).*/\1/p; s/^require k8s\.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$kmod/go.mod")
major=${version#v}; major=${major%%.*}
kminor=${version#v*.}; kminor=${kminor%%.*}
ld=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="$ld -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$kminor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
build "$here/etcd" etcd etcd "" go.etcd.io/etcd/server/v3
build "$here/kwok" kwok "" "" sigs.k8s.io/kwok/cmd/kwok
build "$kmod" "kubernetes-$minor" "" "$ld" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
