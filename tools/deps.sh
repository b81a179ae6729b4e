#!/usr/bin/env bash
# The one list of Debian 12 packages moonadm's build, tests, lab and packaging need, and the one place
# that installs them. `make deps`, `make demo`, `make test` and .ci/run all go through here.
#   tools/deps.sh list      the list, one package a line
#   tools/deps.sh missing   the packages dpkg does not have installed, space-separated (empty: none)
#   tools/deps.sh check     exit 1 with one line saying what to run when something is missing
#   tools/deps.sh install   as root: apt-get only what is missing (no apt-get at all when nothing is);
#                           as another user: the `check` line, exit 1
set -euo pipefail

packages=(
  build-essential pkg-config                                  # cc, make, ar, readelf
  liblua5.4-dev lua5.4 libssl-dev libyaml-dev libcurl4-openssl-dev
  nettle-dev libgmp-dev                                       # SHA-256; RSA key generation (both linked statically)
  lua-cjson lua-luv                                           # loaded by the scripts at run time
  lua-busted lua-argparse lua-check                           # the specs; luacheck (tests/proc/guards_spec.lua)
  openssl curl ca-certificates                                # test fixtures, lab-bins downloads
  iproute2 kmod                                               # the lab's namespaces and bridge
  runc containernetworking-plugins iptables busybox-static    # real-kubelet lab: OCI runtime, CNI, test image
  haproxy keepalived                                          # real-kubelet lab: the virtual-IP images (docs/ha.md)
  valgrind clang libclang-rt-dev                              # make valgrind, make asan, make fuzz
  dpkg-dev git                                                # make deb (dpkg-deb, dpkg-shlibdeps); .ci/run's scratch clone
)

missing() {
  command -v dpkg-query >/dev/null 2>&1 || { echo "${packages[*]}"; return; }
  # One dpkg-query for the whole list (what `dpkg -s` reads); unknown packages are simply absent.
  local st
  st=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null || true)
  local out=() p
  for p in "${packages[@]}"; do
    [[ $'\n'$st$'\n' == *$'\n'"$p ii "* ]] || out+=("$p")
  done
  echo "${out[*]}"
}

line() { # the one line a user gets
  if [ "$(id -u)" = 0 ]; then echo "moonadm: missing Debian packages: $1; run: make deps" >&2
  else echo "moonadm: missing Debian packages: $1; run as root: sudo make deps" >&2; fi
}

case "${1:-}" in
  list) printf '%s\n' "${packages[@]}" ;;
  missing) missing ;;
  check)
    m=$(missing)
    [ -z "$m" ] || { line "$m"; exit 1; } ;;
  install)
    m=$(missing)
    [ -n "$m" ] || exit 0
    command -v apt-get >/dev/null 2>&1 || { echo "moonadm: not a Debian system (no apt-get): install the equivalents of: $m" >&2; exit 1; }
    [ "$(id -u)" = 0 ] || { line "$m"; exit 1; }
    echo "moonadm: installing Debian packages: $m"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $m
    m=$(missing)
    [ -z "$m" ] || { echo "moonadm: still missing after apt-get: $m" >&2; exit 1; } ;;
  *) echo "usage: tools/deps.sh list|missing|check|install" >&2; exit 2 ;;
esac
