#!/usr/bin/env bash
# Builds the lab's real components with the machine's Go from the Go module proxy into .lab/bin:
#   lab/build-bins.sh [control-plane] [node]      (no argument: control-plane)
# control-plane: kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl (k8s.io/kubernetes,
#                lab/k8s), etcd etcdctl (go.etcd.io/etcd, lab/etcd)
# node:          what the real-kubelet lab adds: kubelet kube-proxy (lab/node: the same release and
#                staging pins), containerd v2 with its runc shim and ctr, crictl (cri-tools), coredns,
#                lab-image (lab/images: writes the lab's images with go-containerregistry) and pause
#                (lab/images/pause.c, static)
# Each set is cached outside the clone, keyed by what decides its binaries (modules, versions, the list,
# the build flags), so a second run (also from a fresh clone on the same machine) only links them. Only
# the sets asked for are built: the stand-in lab and CI's first tests need no node set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=${LAB_BIN_DIR:-$top/.lab/bin}
K8S_VERSION=v1.35.4
ETCD_VERSION=v3.6.6
CONTAINERD_VERSION=v2.4.2
CRICTL_VERSION=v1.37.0
COREDNS_VERSION=v1.13.1 # what kubeadm v1.35 deploys (scripts/config/constants.lua)
cache_root=${MOONADM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moonadm}/lab-bins
sets=${*:-control-plane}

# Version information comes from ldflags; without it every component reports v0.0.0-master.
major=${K8S_VERSION#v}; major=${major%%.*}
minor=${K8S_VERSION#v$major.}; minor=${minor%%.*}
k8s_ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ld="$k8s_ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  k8s_ld="$k8s_ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

build() { # dir pkg name ldflags [cgo]: go build inside a wrapper module (its go.sum pins everything)
  local dir=$1 pkg=$2 name=$3 flags=$4 cgo=${5:-1}
  [ -x "$tmp/$name" ] && { echo "lab-bins: $name (already built)"; return; }
  echo "lab-bins: building $name from $pkg ..."
  local t0=$SECONDS
  (cd "$here/$dir" && CGO_ENABLED=$cgo GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath" go build -ldflags "$flags" -o "$tmp/$name.part" "$pkg")
  mv "$tmp/$name.part" "$tmp/$name"
  echo "lab-bins: $name done in $((SECONDS - t0))s"
}
install() { # module@version pkg... name...: go install of a released module as its own go.mod resolves it
  local mv=$1; shift
  local pkgs=() names=() p
  for p in "$@"; do case $p in */*) pkgs+=("$p") ;; *) names+=("$p") ;; esac; done
  local have=1; for p in "${names[@]}"; do [ -x "$tmp/$p" ] || have=0; done
  [ $have = 1 ] && { echo "lab-bins: ${names[*]} (already built)"; return; }
  echo "lab-bins: building ${names[*]} from $mv ..."
  local t0=$SECONDS ver=${mv##*@} gobin=$tmp/gobin
  mkdir -p "$gobin"
  # CGO_ENABLED=0: static binaries (containerd then lacks only btrfs snapshots, which the lab never uses)
  GOBIN=$gobin CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath" go install -ldflags "-s -w" "${pkgs[@]/%/@$ver}"
  for p in "${names[@]}"; do mv "$gobin/$p" "$tmp/$p"; done
  echo "lab-bins: ${names[*]} done in $((SECONDS - t0))s"
}

for set in $sets; do
  case $set in
  control-plane)
    bins="kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl etcd etcdctl"
    # The key covers what decides the binaries, not this script's reporting, so editing a message does
    # not cost a 10-minute rebuild (this set's key is the one earlier versions of this script used).
    key=$( { echo "$bins -trimpath -s -w gitTreeState=clean"; cat "$here"/k8s/go.mod "$here"/k8s/go.sum \
            "$here"/k8s/tools.go "$here"/etcd/go.mod "$here"/etcd/go.sum "$here"/etcd/tools.go; } | sha256sum | cut -c1-16)
    cache="$cache_root/$K8S_VERSION-$ETCD_VERSION-$key" ;;
  node)
    bins="kubelet kube-proxy containerd containerd-shim-runc-v2 ctr crictl coredns lab-image pause"
    key=$( { echo "$bins -trimpath -s -w gitTreeState=clean cgo0 $CONTAINERD_VERSION $CRICTL_VERSION $COREDNS_VERSION"
             cat "$here"/node/go.mod "$here"/node/go.sum "$here"/node/tools.go "$here"/images/go.mod \
               "$here"/images/go.sum "$here"/images/main.go "$here"/images/pause.c; } | sha256sum | cut -c1-16)
    cache="$cache_root/node-$K8S_VERSION-$CONTAINERD_VERSION-$key" ;;
  *) echo "lab-bins: unknown set '$set' (control-plane, node)" >&2; exit 2 ;;
  esac
  have_all=1; for b in $bins; do [ -x "$cache/$b" ] || have_all=0; done
  if [ $have_all = 0 ]; then
    command -v go >/dev/null || { echo "lab-bins: Go is not installed (need go >= 1.25)" >&2; exit 1; }
    tmp=$cache.tmp
    mkdir -p "$tmp"
    if [ "$set" = control-plane ]; then
      build etcd go.etcd.io/etcd/server/v3 etcd "-s -w"
      build etcd go.etcd.io/etcd/etcdctl/v3 etcdctl "-s -w"
      for c in kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl; do
        build k8s "k8s.io/kubernetes/cmd/$c" "$c" "$k8s_ld"
      done
    else
      # static (CGO_ENABLED=0), so the lab's images need no libc; same ldflags as the control plane
      for c in kubelet kube-proxy; do build node "k8s.io/kubernetes/cmd/$c" "$c" "$k8s_ld" 0; done
      install "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" github.com/containerd/containerd/v2/cmd/containerd \
        github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr \
        containerd containerd-shim-runc-v2 ctr
      install "sigs.k8s.io/cri-tools@$CRICTL_VERSION" sigs.k8s.io/cri-tools/cmd/crictl crictl
      install "github.com/coredns/coredns@$COREDNS_VERSION" github.com/coredns/coredns coredns
      build images moonadm.lab/images lab-image "-s -w" 0
      echo "lab-bins: building pause from lab/images/pause.c"
      cc -static -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -o "$tmp/pause" "$here/images/pause.c"
      rm -rf "$tmp/gobin"
    fi
    rm -rf "$cache"; mv "$tmp" "$cache"
  else
    echo "lab-bins: cached in $cache"
  fi
  mkdir -p "$out"
  for b in $bins; do ln -sfn "$cache/$b" "$out/$b"; done
  # No `| head` here: under pipefail a reader that exits first kills the writer with SIGPIPE (exit 141).
  if [ "$set" = control-plane ]; then
    "$out/kube-apiserver" --version
    etcd_version=$("$out/etcd" --version)
    echo "${etcd_version%%$'\n'*}"
  else
    "$out/kubelet" --version
    "$out/containerd" --version
  fi
done
