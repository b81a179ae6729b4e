#!/usr/bin/env bash
# Runs busted specs inside the moonadm binary: tests/busted.sh [busted args] [spec files or dirs]
# (default: tests/spec; the e2e specs under tests/e2e are run by tests/run.sh).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOONADM_BIN:-$top/bin/moonadm}
cd "$top"
has_target=0 has_pattern=0
for a in "$@"; do
  case "$a" in --pattern*|-p) has_pattern=1 ;; -*) ;; *) has_target=1 ;; esac
done
[ $has_target = 1 ] || set -- "$@" tests/spec
[ $has_pattern = 1 ] || set -- --pattern=_spec "$@"
exec "$bin" lua tests/busted_main.lua --lpath="$top/tests/spec/?.lua;$top/tests/e2e/?.lua" "$@"
