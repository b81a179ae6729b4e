#!/usr/bin/env bash
# `make demo`: the most complete real thing moonadm does today. Until the lab lands, that is the
# local half of `moonadm init`, run phase by phase into a temp root, showing the resolved phase
# tree and every file the phases wrote. A phase whose body lands in a later issue says so (exit 3).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/bin/moonadm
root=$(mktemp -d "${TMPDIR:-/tmp}/moonadm-demo.XXXXXX")
echo "== moonadm $("$bin" version -o short): the init flow, resolved (moonadm phases init)"
"$bin" phases init
echo
echo "== the local init phases, into the root $root"
for p in preflight "certs all" "kubeconfig all" "etcd local" "control-plane all" kubelet-start; do
  printf -- '-- moonadm init phase %s --root %s\n' "$p" "$root"
  # shellcheck disable=SC2086
  "$bin" init phase $p --root "$root" --apiserver-advertise-address 10.0.0.1 --node-runtime none
  rc=$?
  [ $rc = 0 ] || echo "   (exit $rc$([ $rc = 3 ] && echo ': lands with a later issue'))"
done
echo
echo "== files written under $root"
(cd "$root" && find . -type f -printf '%m %p\n' | sort -k2)
echo
echo "The journal of this run: $root/var/lib/moonadm/journal/init.json"
echo "Remove the demo root with: rm -rf $root"
