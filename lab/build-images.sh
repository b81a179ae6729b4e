#!/usr/bin/env bash
# Builds the real-kubelet lab's container images from the lab's own binaries and this machine's
# files (nothing can be pulled here) into one archive that each node's containerd imports:
#   lab/build-images.sh            -> .lab/images.tar (a link into the cache)
# The names and tags are the ones kubeadm v1.35's manifests and addons use for the default
# imageRepository (registry.k8s.io), so `imagePullPolicy: IfNotPresent` finds them:
#   kube-apiserver kube-controller-manager kube-scheduler kube-proxy :v1.35.4, etcd:3.6.6-0 (with etcdutl),
#   coredns/coredns:v1.13.1, pause:3.10.1; and moonadm.lab/busybox:1.35.0 (Debian's busybox-static)
# for test pods. Every other release built in full (its control-plane and node sets: .lab/bin/<release>/
# has kube-proxy) adds the images its own kubeadm lists (`kubeadm config images list`): its four
# components, its etcd, and its coredns and pause tags (pause is always the lab's pause binary), so
# an upgrade that rewrites a manifest to the next release's tag finds that image on every node.
# Each image is one layer: its binary, the shared libraries ldd names for it (the
# control-plane binaries are cgo-linked), and for kube-proxy Debian's iptables (nf_tables).
# Cached outside the clone, keyed by the images and the binaries each is made from (their
# content-keyed cache paths) and this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=${LAB_BIN_DIR:-$top/.lab/bin}
out=${LAB_IMAGES:-$top/.lab/images.tar}
K8S_VERSION=v1.35.4
REPO=registry.k8s.io
cache_root=${MOONADM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moonadm}/lab-images

bins="kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd etcdctl etcdutl coredns pause lab-image"
for b in $bins; do
  [ -x "$bin/$b" ] || { echo "lab-images: $bin/$b is missing: run make lab-bins-node" >&2; exit 1; }
done
for f in /bin/busybox /usr/sbin/xtables-nft-multi /usr/sbin/haproxy /usr/sbin/keepalived /usr/bin/curl; do
  [ -x "$f" ] || { echo "lab-images: $f is missing: run make deps" >&2; exit 1; }
done
# The images as "REF FILE..." lines (FILE: the binaries in its layer), the default release's first.
images="$REPO/kube-apiserver:$K8S_VERSION $bin/kube-apiserver
$REPO/kube-controller-manager:$K8S_VERSION $bin/kube-controller-manager
$REPO/kube-scheduler:$K8S_VERSION $bin/kube-scheduler
$REPO/kube-proxy:$K8S_VERSION $bin/kube-proxy
$REPO/etcd:3.6.6-0 $bin/etcd $bin/etcdctl $bin/etcdutl
$REPO/coredns/coredns:v1.13.1 $bin/coredns
$REPO/pause:3.10.1 $bin/pause"
have() { grep -q "^$1 " <<<"$images"; }
# The coredns binary of a tag: the release's own (the node set builds it when it differs), else the default's.
coredns_of() {
  local f v
  for f in "$bin/$1/coredns" "$bin/coredns"; do
    [ -x "$f" ] || continue
    v=$("$f" -version); v=${v%%$'\n'*}
    [ "v${v#CoreDNS-}" = "$2" ] && { echo "$f"; return; }
  done
}
for d in "$bin"/v*/; do
  [ -d "$d" ] || continue
  release=$(basename "$d")
  [ "$release" = "$K8S_VERSION" ] && continue
  [ -x "$d/kube-apiserver" ] || continue
  missing=
  for b in kubeadm kube-apiserver kube-controller-manager kube-scheduler etcd etcdctl kube-proxy; do
    [ -x "$d/$b" ] || missing="$missing $b"
  done
  if [ -n "$missing" ]; then
    echo "lab-images: $release left out (no$missing in $d: LAB_RELEASES=$release make lab-bins-node)"
    continue
  fi
  # No pipe into the loop: under pipefail a failing kubeadm must stop the script, not be read as no images.
  list=$("$d/kubeadm" config images list --kubernetes-version "$release")
  for ref in $list; do
    have "$ref" && continue
    repo=${ref%:*}; tag=${ref##*:}
    case ${repo##*/} in
    kube-apiserver|kube-controller-manager|kube-scheduler|kube-proxy) files="$d/${repo##*/}" ;;
    etcd) files="$d/etcd $d/etcdctl" ;;
    coredns)
      files=$(coredns_of "$release" "$tag")
      [ -n "$files" ] || { echo "lab-images: no coredns $tag for $release: LAB_RELEASES=$release make lab-bins-node" >&2; exit 1; } ;;
    pause) files="$bin/pause" ;;
    *) echo "lab-images: $release's kubeadm lists $ref, which the lab cannot make" >&2; exit 1 ;;
    esac
    images="$images
$ref $files"
  done
  echo "lab-images: with $release's images"
done
# Debian's versions without the revision (2.6.12-1+deb12u4 -> 2.6.12)
haproxy_tag=$(dpkg-query -W -f='${Version}' haproxy); haproxy_tag=${haproxy_tag%%-*}
keepalived_tag=$(dpkg-query -W -f='${Version}' keepalived); keepalived_tag=${keepalived_tag#*:}; keepalived_tag=${keepalived_tag%%-*}
key=$( {
         while read -r ref files; do echo "$ref"; for f in $files; do readlink -f "$f"; done; done <<<"$images"
         readlink -f "$bin/lab-image"; cat "$0"
         dpkg-query -W -f='${Package} ${Version}\n' libc6 iptables busybox-static haproxy keepalived curl 2>/dev/null || true; } |
       sha256sum | cut -c1-16)
cache=$cache_root/$key
if [ -s "$cache/images.tar" ]; then
  echo "lab-images: cached in $cache"
else
  t0=$SECONDS
  work=$(mktemp -d "${TMPDIR:-/tmp}/moonadm-lab-images.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  # copy FILE to ROOT at DEST (default: the same path), and the shared libraries it needs
  put() {
    local root=$1 file=$2 dest=${3:-$2}
    mkdir -p "$root$(dirname "$dest")"
    cp -L "$file" "$root$dest"
    local lib
    for lib in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*' || true); do
      [ -e "$root$lib" ] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  }
  base() { # the files every image has: a /tmp, users, name-service order
    local root=$1
    mkdir -p "$root/tmp" "$root/etc" "$root/var/run"
    chmod 1777 "$root/tmp"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
    printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
  }
  args=()
  image() { # REF ROOT ENTRYPOINT
    local ref=$1 root=$2 entry=$3 layer=$work/$(echo "$1" | tr '/:' '__').tar
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf "$layer" .
    args+=("$ref" "$layer" "$entry")
  }
  n=0
  while read -r ref files; do
    n=$((n + 1)); r=$work/$n; set -- $files
    case ${ref%:*} in
    */kube-apiserver|*/kube-controller-manager|*/kube-scheduler)
      base "$r"; put "$r" "$1" "/usr/local/bin/$(basename "${ref%:*}")"; image "$ref" "$r" - ;;
    */kube-proxy)
      base "$r"; put "$r" "$1" /usr/local/bin/kube-proxy
      put "$r" /usr/sbin/xtables-nft-multi
      for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
        ln -s xtables-nft-multi "$r/usr/sbin/$t"
      done
      mkdir -p "$r/usr/lib/x86_64-linux-gnu"
      cp -a /usr/lib/x86_64-linux-gnu/xtables "$r/usr/lib/x86_64-linux-gnu/"
      for so in "$r"/usr/lib/x86_64-linux-gnu/xtables/*.so; do
        for lib in $(ldd "$so" 2>/dev/null | grep -o '/[^ ]*' || true); do
          [ -e "$r$lib" ] || { mkdir -p "$r$(dirname "$lib")"; cp -L "$lib" "$r$lib"; }
        done
      done
      image "$ref" "$r" - ;;
    */etcd)
      base "$r"; put "$r" "$1" /usr/local/bin/etcd; put "$r" "$2" /usr/local/bin/etcdctl
      # etcdutl as etcd's own images have it (moonadm etcd snapshot restore runs it through the CRI)
      [ -n "${3:-}" ] && put "$r" "$3" /usr/local/bin/etcdutl
      image "$ref" "$r" /usr/local/bin/etcd ;;
    */coredns) base "$r"; put "$r" "$1" /coredns; image "$ref" "$r" /coredns ;;
    */pause) mkdir -p "$r"; put "$r" "$1" /pause; image "$ref" "$r" /pause ;;
    esac
  done <<<"$images"
  r=$work/busybox; base "$r"; put "$r" /bin/busybox /bin/busybox
  for a in $(/bin/busybox --list); do [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"; done
  image "moonadm.lab/busybox:1.35.0" "$r" -
  # The control-plane endpoint's virtual IP (moonadm init --control-plane-endpoint-vip): Debian's
  # haproxy (with its Lua) and keepalived; keepalived's check script needs a shell and curl.
  r=$work/haproxy; base "$r"; put "$r" /usr/sbin/haproxy /usr/local/sbin/haproxy
  image "moonadm.lab/haproxy:$haproxy_tag" "$r" -
  r=$work/keepalived; base "$r"; put "$r" /usr/sbin/keepalived /usr/local/sbin/keepalived; put "$r" /usr/bin/curl
  put "$r" /bin/busybox /bin/busybox; ln -s busybox "$r/bin/sh"
  mkdir -p "$r/etc/ssl/certs" "$r/run/keepalived"
  image "moonadm.lab/keepalived:$keepalived_tag" "$r" -
  mkdir -p "$cache.tmp"
  "$bin/lab-image" "$cache.tmp/images.tar" "${args[@]}"
  rm -rf "$cache"; mv "$cache.tmp" "$cache"
  echo "lab-images: built $(( $(stat -c %s "$cache/images.tar") / 1048576 )) MiB in $((SECONDS - t0))s"
fi
mkdir -p "$(dirname "$out")"
ln -sfn "$cache/images.tar" "$out"
