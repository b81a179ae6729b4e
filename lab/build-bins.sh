#!/usr/bin/env bash
# Builds the lab's real components with the machine's Go from the Go module proxy:
#   kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl (k8s.io/kubernetes, lab/k8s)
#   etcd etcdctl (go.etcd.io/etcd, lab/etcd)
# into .lab/bin. Results are cached outside the clone, keyed by the wrapper modules' contents,
# so a second run (also from a fresh clone on the same machine) only links the cached binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=${LAB_BIN_DIR:-$top/.lab/bin}
K8S_VERSION=v1.35.4
ETCD_VERSION=v3.6.6
cache_root=${MOONADM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moonadm}/lab-bins
bins="kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl etcd etcdctl"
# The key covers what decides the binaries (modules, versions, the list, the build flags below),
# not this script's reporting, so editing a message does not cost a 10-minute rebuild.
key=$( { echo "$bins -trimpath -s -w gitTreeState=clean"; cat "$here"/k8s/go.mod "$here"/k8s/go.sum \
        "$here"/k8s/tools.go "$here"/etcd/go.mod "$here"/etcd/go.sum "$here"/etcd/tools.go; } | sha256sum | cut -c1-16)
cache="$cache_root/$K8S_VERSION-$ETCD_VERSION-$key"

have_all() { for b in $bins; do [ -x "$1/$b" ] || return 1; done; }

if ! have_all "$cache"; then
  command -v go >/dev/null || { echo "lab-bins: Go is not installed (need go >= 1.25)" >&2; exit 1; }
  mkdir -p "$cache.tmp"
  export GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
  # Version information comes from ldflags; without it every component reports v0.0.0-master.
  major=${K8S_VERSION#v}; major=${major%%.*}
  minor=${K8S_VERSION#v$major.}; minor=${minor%%.*}
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  build() { # dir pkg name ldflags
    local dir=$1 pkg=$2 name=$3 flags=$4
    [ -x "$cache.tmp/$name" ] && { echo "lab-bins: $name (already built)"; return; }
    echo "lab-bins: building $name from $pkg ..."
    local t0=$SECONDS
    (cd "$here/$dir" && go build -ldflags "$flags" -o "$cache.tmp/$name.part" "$pkg")
    mv "$cache.tmp/$name.part" "$cache.tmp/$name"
    echo "lab-bins: $name done in $((SECONDS - t0))s"
  }
  build etcd go.etcd.io/etcd/server/v3 etcd "-s -w"
  build etcd go.etcd.io/etcd/etcdctl/v3 etcdctl "-s -w"
  for c in kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl; do
    build k8s "k8s.io/kubernetes/cmd/$c" "$c" "$ld"
  done
  rm -rf "$cache"; mv "$cache.tmp" "$cache"
else
  echo "lab-bins: cached in $cache"
fi
mkdir -p "$out"
for b in $bins; do ln -sfn "$cache/$b" "$out/$b"; done
# No `| head` here: under pipefail a reader that exits first kills the writer with SIGPIPE (exit 141).
"$out/kube-apiserver" --version
etcd_version=$("$out/etcd" --version)
echo "${etcd_version%%$'\n'*}"
