#!/usr/bin/env bash
# Runs busted specs inside the moonadm binary: tests/busted.sh [busted args] [spec files or dirs]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOONADM_BIN:-$top/bin/moonadm}
cd "$top"
has_target=0
for a in "$@"; do case "$a" in -*) ;; *) has_target=1 ;; esac; done
[ $has_target = 1 ] || set -- "$@" tests/spec
exec "$bin" lua tests/busted_main.lua --pattern=_spec --lpath="$top/tests/spec/?.lua" "$@"
