#!/usr/bin/env bash
# Runs busted specs inside the moonadm binary: tests/busted.sh [busted args] [spec files or dirs]
# (default: tests/spec, the specs that run in-process, and tests/proc, those that run processes;
# tests/run.sh runs the e2e specs, tests/e2e, on the lab). MOONADM_BIN: another binary.
# Every lab the specs bring up is taken down when they end, also on failure or interruption
# (SIGINT, SIGTERM): helpers.lua's moonadm() records each `lab up` in the file MOONADM_E2E_LABS
# names, this run's own, so a lab the run did not bring up (`make demo`'s, another person's) is
# never touched. MOONADM_KEEP_LABS=1 leaves them up, to look around.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOONADM_BIN:-$top/bin/moonadm}
cd "$top"
has_target=0 has_pattern=0
for a in "$@"; do
  case "$a" in --pattern*|-p) has_pattern=1 ;; -*) ;; *) has_target=1 ;; esac
done
[ $has_target = 1 ] || set -- "$@" tests/spec tests/proc
[ $has_pattern = 1 ] || set -- --pattern=_spec "$@"

MOONADM_E2E_LABS=$(mktemp "${TMPDIR:-/tmp}/moonadm-labs.XXXXXX")
export MOONADM_E2E_LABS
labs_down() {
  [ -s "$MOONADM_E2E_LABS" ] || return 0
  if [ -n "${MOONADM_KEEP_LABS:-}" ]; then
    echo "busted.sh: left up (MOONADM_KEEP_LABS): $(cut -f1 "$MOONADM_E2E_LABS" | sort -u | tr '\n' ' ')" >&2
    return 0
  fi
  local name dir
  sort -u "$MOONADM_E2E_LABS" | while IFS=$'\t' read -r name dir; do
    "$bin" lab down --name "$name" ${dir:+--dir "$dir"} >/dev/null 2>&1 ||
      echo "busted.sh: lab down --name $name failed: $bin lab down --name $name${dir:+ --dir $dir}" >&2
  done
}
# busted runs in a process group of its own, so that an interruption stops it and every command a
# spec is running (a `lab up` half way) before the labs are taken down.
child=
stop() { [ -z "$child" ] || { kill -TERM -- "-$child" 2>/dev/null; wait "$child" 2>/dev/null || true; }; exit 130; }
trap 'labs_down; rm -f "$MOONADM_E2E_LABS"' EXIT
trap stop INT TERM
setsid "$bin" lua tests/busted_main.lua --lpath="$top/tests/spec/?.lua;$top/tests/e2e/?.lua" "$@" &
child=$!
rc=0
wait "$child" || rc=$?
child=
exit "$rc"
