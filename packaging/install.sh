#!/usr/bin/env bash
# `make install`: moonadm laid out as kubeadm's package lays out kubeadm.
#   packaging/install.sh BIN      with DESTDIR (staging root), PREFIX (default /usr/local),
#                                 SYSTEMDUNITDIR (default $PREFIX/lib/systemd/system)
#   $PREFIX/bin/moonadm                                          0755
#   $PREFIX/share/man/man1/moonadm*.1.gz                         one per command (tools/gen-man.lua)
#   $PREFIX/share/bash-completion/completions/moonadm            `moonadm completion bash`
#   $PREFIX/share/zsh/vendor-completions/_moonadm                `moonadm completion zsh`
#   $PREFIX/share/fish/vendor_completions.d/moonadm.fish         `moonadm completion fish`
#   $SYSTEMDUNITDIR/kubelet.service.d/10-kubeadm.conf            packaging/10-kubeadm.conf
#   $SYSTEMDUNITDIR/moonadm-certs-renew.{service,timer}          the renewal timer, not enabled
#   $SYSTEMDUNITDIR/moonadm-etcd-snapshot.{service,timer}        the snapshot timer, not enabled
# systemd reads drop-ins under /usr/lib/systemd/system (the .deb: PREFIX=/usr, where Debian's kubeadm
# package puts its own) and under /usr/local/lib/systemd/system (the default PREFIX).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=${1:?usage: packaging/install.sh BIN}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
prefix=${PREFIX:-/usr/local}
unitdir=${SYSTEMDUNITDIR:-$prefix/lib/systemd/system}
dest=${DESTDIR:-}
root=$dest$prefix
die() { echo "install: $*" >&2; exit 1; }
[ -x "$bin" ] || die "$bin is missing: run make"

work=$(mktemp -d "${TMPDIR:-/tmp}/moonadm-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Everything generated comes first, so a failure installs nothing.
for sh in bash zsh fish; do
  rc=0
  (cd "$work" && "$bin" completion "$sh" </dev/null >"$work/completion.$sh" 2>"$work/completion.$sh.err") || rc=$?
  [ "$rc" = 0 ] || die "\`moonadm completion $sh\` failed (exit $rc): $(head -c 300 "$work/completion.$sh.err"); no completions to install"
  [ -s "$work/completion.$sh" ] || die "\`moonadm completion $sh\` printed nothing; no completions to install"
done

# Man pages: dated by the last commit when this is a git checkout (reproducible), else today.
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  SOURCE_DATE_EPOCH=$(git -C "$top" log -1 --format=%ct 2>/dev/null || true)
  [ -n "$SOURCE_DATE_EPOCH" ] && export SOURCE_DATE_EPOCH
fi
"$bin" lua "$top/tools/gen-man.lua" "$bin" "$work/man1" >"$work/gen-man.log" || { cat "$work/gen-man.log"; die "man pages: tools/gen-man.lua failed"; }
[ -f "$work/man1/moonadm.1" ] || die "man pages: no moonadm.1 was generated"
for f in "$work"/man1/*.1; do gzip -n -9 "$f"; done

install -d -m 0755 "$root/bin" "$root/share/man/man1" "$root/share/bash-completion/completions" \
  "$root/share/zsh/vendor-completions" "$root/share/fish/vendor_completions.d" "$dest$unitdir/kubelet.service.d"
install -m 0755 "$bin" "$root/bin/moonadm"
install -m 0644 "$work"/man1/*.1.gz "$root/share/man/man1/"
install -m 0644 "$work/completion.bash" "$root/share/bash-completion/completions/moonadm"
install -m 0644 "$work/completion.zsh" "$root/share/zsh/vendor-completions/_moonadm"
install -m 0644 "$work/completion.fish" "$root/share/fish/vendor_completions.d/moonadm.fish"
install -m 0644 "$here/10-kubeadm.conf" "$dest$unitdir/kubelet.service.d/10-kubeadm.conf"
for unit in moonadm-certs-renew moonadm-etcd-snapshot; do
  sed "s|@BINDIR@|$prefix/bin|" "$here/$unit.service" > "$work/$unit.service"
  install -m 0644 "$work/$unit.service" "$here/$unit.timer" "$dest$unitdir/"
done
n=$(ls "$work"/man1 | wc -l)
echo "install: moonadm, $n man pages, bash/zsh/fish completions, the kubelet drop-in and the renewal and snapshot timers under ${dest:-}$prefix$( [ "$unitdir" = "$prefix/lib/systemd/system" ] || echo " (drop-in: $dest$unitdir)")"
