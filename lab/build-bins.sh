#!/usr/bin/env bash
# Builds the lab's real components with the machine's Go from the Go module proxy into .lab/bin:
#   lab/build-bins.sh [control-plane] [node]      (no argument: control-plane)
#   LAB_RELEASES="v1.35.4 v1.36.3" lab/build-bins.sh control-plane
#   LAB_RELEASES=v1.37.2 lab/build-bins.sh reference
#   lab/build-bins.sh etcdutl
# control-plane: kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl (k8s.io/kubernetes,
#                lab/k8s), etcd etcdctl (go.etcd.io/etcd, lab/etcd)
# reference:     the release's kubeadm alone (the differential spec's column for that release)
# etcdutl:       etcd's offline tool at the default release's etcd (lab/etcdutl), what `moonadm etcd
#                snapshot restore` runs; a set of its own, so the control plane's cache key is unchanged
# node:          what the real-kubelet lab adds: kubelet kube-proxy (lab/node: the same release and
#                staging pins), containerd v2 with its runc shim and ctr, crictl (cri-tools), coredns,
#                lab-image (lab/images: writes the lab's images with go-containerregistry) and pause
#                (lab/images/pause.c, static). For a release other than the default only that release's
#                kubelet, kube-proxy and the coredns its kubeadm deploys (when it differs): containerd,
#                crictl, lab-image and pause stay the default release's (build both sets).
# Releases: LAB_RELEASES (default v1.35.4, the lab's default release). v1.35.4's wrapper modules are
# lab/{k8s,etcd,node}; another release's are lab/releases/<release>/{k8s,etcd,node}, each with the etcd
# its kubeadm pins. Every release built is linked into .lab/bin/<release>/ and, by image, into
# .lab/bin/images/<image>:<tag> (the stand-in kubelet runs the binary a manifest's image names);
# the default release is also linked into .lab/bin/ itself, the layout the lab has always read.
# Each set is cached outside the clone, keyed by what decides its binaries (modules, versions, the list,
# the build flags), so a second run (also from a fresh clone on the same machine) only links them. Only
# the sets asked for are built: the stand-in lab and CI's first tests need no node set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=${LAB_BIN_DIR:-$top/.lab/bin}
DEFAULT_RELEASE=v1.35.4
releases=${LAB_RELEASES:-$DEFAULT_RELEASE}
CONTAINERD_VERSION=v2.4.2
CRICTL_VERSION=v1.37.0
cache_root=${MOONADM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moonadm}/lab-bins
sets=${*:-control-plane}

# What each release builds from: its wrapper modules' folder and the etcd its kubeadm pins (the image
# tag is the version + "-0"). A release not listed here has no wrapper modules yet.
release_dir() { case $1 in v1.35.4) echo "$here" ;; *) echo "$here/releases/$1" ;; esac; }
etcd_version() {
  case $1 in v1.35.4) echo v3.6.6 ;; v1.36.3) echo v3.6.8 ;; v1.37.2) echo v3.7.0 ;; *) echo "" ;; esac
}
# The coredns each release's kubeadm deploys (scripts/config/releases.lua; the image tag is the version).
coredns_version() {
  case $1 in v1.35.4) echo v1.13.1 ;; v1.36.3) echo v1.14.2 ;; v1.37.2) echo v1.14.6 ;; *) echo "" ;; esac
}
COREDNS_VERSION=$(coredns_version $DEFAULT_RELEASE)

build() { # module-dir pkg name ldflags [cgo]: go build inside a wrapper module (its go.sum pins everything)
  local dir=$1 pkg=$2 name=$3 flags=$4 cgo=${5:-1}
  [ -x "$tmp/$name" ] && { echo "lab-bins: $name (already built)"; return; }
  echo "lab-bins: building $name from $pkg ..."
  local t0=$SECONDS
  (cd "$dir" && CGO_ENABLED=$cgo GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath" go build -ldflags "$flags" -o "$tmp/$name.part" "$pkg")
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

for release in $releases; do
  rdir=$(release_dir "$release")
  etcd=$(etcd_version "$release")
  if [ -z "$etcd" ] || [ ! -f "$rdir/k8s/go.mod" ]; then
    echo "lab-bins: no wrapper modules for release '$release' (have: v1.35.4 $(cd "$here/releases" && echo v*))" >&2; exit 2
  fi
  # Version information comes from ldflags; without it every component reports v0.0.0-master.
  major=${release#v}; major=${major%%.*}
  minor=${release#v$major.}; minor=${minor%%.*}
  k8s_ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ld="$k8s_ld -X $p.gitVersion=$release -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    k8s_ld="$k8s_ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
for set in $sets; do
  case $set in
  control-plane)
    bins="kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl etcd etcdctl"
    # The key covers what decides the binaries, not this script's reporting, so editing a message does
    # not cost a 10-minute rebuild (this set's key is the one earlier versions of this script used).
    key=$( { echo "$bins -trimpath -s -w gitTreeState=clean"; cat "$rdir"/k8s/go.mod "$rdir"/k8s/go.sum \
            "$rdir"/k8s/tools.go "$rdir"/etcd/go.mod "$rdir"/etcd/go.sum "$rdir"/etcd/tools.go; } | sha256sum | cut -c1-16)
    cache="$cache_root/$release-$etcd-$key" ;;
  reference)
    # the release's kubeadm alone: what the differential spec's column for that release needs
    bins="kubeadm"
    key=$( { echo "$bins -trimpath -s -w gitTreeState=clean"; cat "$rdir"/k8s/go.mod "$rdir"/k8s/go.sum "$rdir"/k8s/tools.go; } \
      | sha256sum | cut -c1-16)
    cache="$cache_root/reference-$release-$key" ;;
  node)
    [ -f "$rdir/node/go.mod" ] || { echo "lab-bins: no node wrapper module for release '$release' ($rdir/node)" >&2; exit 2; }
    coredns=$(coredns_version "$release")
    if [ "$release" = "$DEFAULT_RELEASE" ]; then
      bins="kubelet kube-proxy containerd containerd-shim-runc-v2 ctr crictl coredns lab-image pause"
      # this key is the one earlier versions of this script used: an existing cache stays valid
      key=$( { echo "$bins -trimpath -s -w gitTreeState=clean cgo0 $CONTAINERD_VERSION $CRICTL_VERSION $COREDNS_VERSION"
               cat "$rdir"/node/go.mod "$rdir"/node/go.sum "$rdir"/node/tools.go "$here"/images/go.mod \
                 "$here"/images/go.sum "$here"/images/main.go "$here"/images/pause.c; } | sha256sum | cut -c1-16)
      cache="$cache_root/node-$release-$CONTAINERD_VERSION-$key"
    else
      # the release's own node binaries; the runtime and the image tools are the default set's
      bins="kubelet kube-proxy"
      [ "$coredns" != "$COREDNS_VERSION" ] && bins="$bins coredns"
      key=$( { echo "$bins -trimpath -s -w gitTreeState=clean cgo0 coredns-$coredns"
               cat "$rdir"/node/go.mod "$rdir"/node/go.sum "$rdir"/node/tools.go; } | sha256sum | cut -c1-16)
      cache="$cache_root/node-$release-$key"
    fi ;;
  etcdutl)
    [ "$release" = "$DEFAULT_RELEASE" ] || continue # one etcdutl restores every release's snapshots
    bins="etcdutl"
    key=$( { echo "$bins -trimpath -s -w"; cat "$here"/etcdutl/go.mod "$here"/etcdutl/go.sum "$here"/etcdutl/tools.go; } \
      | sha256sum | cut -c1-16)
    cache="$cache_root/etcdutl-$etcd-$key" ;;
  *) echo "lab-bins: unknown set '$set' (control-plane, reference, node, etcdutl)" >&2; exit 2 ;;
  esac
  have_all=1; for b in $bins; do [ -x "$cache/$b" ] || have_all=0; done
  if [ $have_all = 0 ]; then
    command -v go >/dev/null || { echo "lab-bins: Go is not installed (need go >= 1.26)" >&2; exit 1; }
    tmp=$cache.tmp
    mkdir -p "$tmp"
    if [ "$set" = reference ]; then
      build "$rdir/k8s" k8s.io/kubernetes/cmd/kubeadm kubeadm "$k8s_ld"
    elif [ "$set" = etcdutl ]; then
      build "$here/etcdutl" go.etcd.io/etcd/etcdutl/v3 etcdutl "-s -w"
    elif [ "$set" = control-plane ]; then
      build "$rdir/etcd" go.etcd.io/etcd/server/v3 etcd "-s -w"
      build "$rdir/etcd" go.etcd.io/etcd/etcdctl/v3 etcdctl "-s -w"
      for c in kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl; do
        build "$rdir/k8s" "k8s.io/kubernetes/cmd/$c" "$c" "$k8s_ld"
      done
    else
      # static (CGO_ENABLED=0), so the lab's images need no libc; same ldflags as the control plane
      for c in kubelet kube-proxy; do build "$rdir/node" "k8s.io/kubernetes/cmd/$c" "$c" "$k8s_ld" 0; done
      case " $bins " in *" coredns "*) install "github.com/coredns/coredns@$coredns" github.com/coredns/coredns coredns ;; esac
    fi
    if [ "$set" = node ] && [ "$release" = "$DEFAULT_RELEASE" ]; then
      install "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" github.com/containerd/containerd/v2/cmd/containerd \
        github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr \
        containerd containerd-shim-runc-v2 ctr
      install "sigs.k8s.io/cri-tools@$CRICTL_VERSION" sigs.k8s.io/cri-tools/cmd/crictl crictl
      build "$here/images" moonadm.lab/images lab-image "-s -w" 0
      echo "lab-bins: building pause from lab/images/pause.c"
      cc -static -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -o "$tmp/pause" "$here/images/pause.c"
    fi
    rm -rf "$tmp/gobin"
    rm -rf "$cache"; mv "$tmp" "$cache"
  else
    echo "lab-bins: cached in $cache"
  fi
  # The release's own folder, and its images by tag; the default release also at the top.
  mkdir -p "$out/$release" "$out/images"
  for b in $bins; do
    ln -sfn "$cache/$b" "$out/$release/$b"
    [ "$release" = "$DEFAULT_RELEASE" ] && ln -sfn "$cache/$b" "$out/$b"
    case $b in
    kube-apiserver|kube-controller-manager|kube-scheduler|kube-proxy) ln -sfn "$cache/$b" "$out/images/$b:$release" ;;
    etcd) ln -sfn "$cache/$b" "$out/images/etcd:${etcd#v}-0" ;;
    esac
  done
  # No `| head` here: under pipefail a reader that exits first kills the writer with SIGPIPE (exit 141).
  if [ "$set" = reference ]; then
    "$out/$release/kubeadm" version -o short
  elif [ "$set" = etcdutl ]; then
    etcdutl_out=$("$out/$release/etcdutl" version)
    echo "${etcdutl_out%%$'\n'*}"
  elif [ "$set" = control-plane ]; then
    "$out/$release/kube-apiserver" --version
    etcd_out=$("$out/$release/etcd" --version)
    echo "${etcd_out%%$'\n'*}"
  else
    "$out/$release/kubelet" --version
    if [ "$release" = "$DEFAULT_RELEASE" ]; then "$out/$release/containerd" --version; fi
    if [ -x "$out/$release/coredns" ]; then v=$("$out/$release/coredns" -version); echo "${v%%$'\n'*}"; fi
  fi
done
done
