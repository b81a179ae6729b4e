#!/usr/bin/env bash
# Runs every test and prints one closing line: "tests: N passed, N failed".
#   tests/run.sh [BUILD_DIR]   (default build: its tests/test_* are the C unit tests)
# In order: the C unit tests, the busted specs inside moonadm (tests/spec, in-process, and
# tests/proc, which run processes: tests/busted.sh), with MOONADM_SANITIZERS=1 the sanitizer,
# valgrind and fuzzing passes, the e2e specs on the lab (tests/e2e/*_spec.lua, when the lab's
# binaries are built; MOONADM_NO_E2E=1 skips them, MOONADM_LONG=1 adds tests/e2e/long_*), and the
# results of checks run before (MOONADM_EXTRA_RESULTS). tests/busted.sh takes down every lab the
# e2e specs brought up, and only those.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cd "$top"
passed=0 failed=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

add() { passed=$((passed + $1)); failed=$((failed + $2)); }

# Counts a busted run from its summary line ("N successes / N failures / N errors / N pending"):
# failures and errors fail; no summary (busted crashed, or was killed) is one failure.
#   add_busted WHAT LOG EXIT_CODE
add_busted() {
  local line s f e p
  line=$(grep -E '[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' "$2" | tail -1)
  if [ -z "$line" ]; then echo "$1: no summary (exit $3)"; add 0 1; return; fi
  s=$(grep -oE '[0-9]+ success' <<<"$line" | grep -oE '[0-9]+')
  f=$(grep -oE '[0-9]+ failure' <<<"$line" | grep -oE '[0-9]+')
  e=$(grep -oE '[0-9]+ error' <<<"$line" | grep -oE '[0-9]+')
  p=$(grep -oE '[0-9]+ pending' <<<"$line" | grep -oE '[0-9]+' || echo 0)
  echo "$1: $s passed, $((f + e)) failed, $p pending"
  add "$s" $((f + e))
}

# Runs a command in the background and waits for it, so that SIGINT or SIGTERM reach it at once
# (tests/busted.sh then takes its labs down) instead of after it ends.
child=
run_bg() { "$@" & child=$!; local rc=0; wait "$child" || rc=$?; child=; return "$rc"; }

# Checks run before this script and counted in its closing line: MOONADM_EXTRA_RESULTS names a file
# of lines "PASSED FAILED what" (.ci/run's `make demo` in a scratch clone). Read here and unset, so
# the nested runs (make asan) do not count them again.
extra=${MOONADM_EXTRA_RESULTS:-}
unset MOONADM_EXTRA_RESULTS

# An API failure a phase got back and never read fails that phase in every test (scripts/framework/runner.lua).
export MOONADM_STRICT_RESULTS=1

echo "== C unit tests"
for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  "$t" > "$out/c.log" 2>&1; rc=$?
  grep -v '^ok ' "$out/c.log"
  line=$(grep -E '^# tests: [0-9]+ passed, [0-9]+ failed' "$out/c.log" | tail -1)
  if [ -z "$line" ]; then
    echo "$(basename "$t"): crashed (exit $rc) before its summary"; add 0 1
  else
    p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    echo "$(basename "$t"): $p passed, $f failed"; add "$p" "$f"
    [ $rc = 0 ] || [ "$f" != 0 ] || add 0 1
  fi
done

echo "== busted specs (inside moonadm)"
tests/busted.sh --output=utfTerminal > "$out/b.log" 2>&1; rc=$?
cat "$out/b.log"
add_busted specs "$out/b.log" "$rc"

# MOONADM_SANITIZERS=1 (.ci/run sets it): the C tests and the specs under ASan+UBSan (their own
# summary line is added in), the engine tests under valgrind, and a short fuzzing pass (each fuzzer
# FUZZ_SECONDS, default 3 here) count as tests too.
if [ -n "${MOONADM_SANITIZERS:-}" ]; then
  echo "== sanitizers: ASan+UBSan (C tests and specs), valgrind (engine tests), fuzzing"
  MOONADM_SANITIZERS= make -s asan > "$out/asan.log" 2>&1; rc=$?
  line=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed' "$out/asan.log" | tail -1)
  reports=$(grep -cE 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$out/asan.log")
  if [ -z "$line" ]; then
    tail -30 "$out/asan.log"; echo "asan: no summary (exit $rc)"; add 0 1
  else
    p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    grep -E '^(Failure|Error) →' -A3 "$out/asan.log"
    echo "asan: $p passed, $f failed, $reports sanitizer reports"; add "$p" $((f + reports))
  fi
  if MOONADM_SANITIZERS= make -s valgrind > "$out/vg.log" 2>&1; then echo "valgrind: clean"; add 1 0
  else tail -30 "$out/vg.log"; echo "valgrind: errors"; add 0 1; fi
  if command -v clang >/dev/null; then
    if MOONADM_SANITIZERS= make -s fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-3}" > "$out/fuzz.log" 2>&1; then
      n=$(grep -c '^== fuzz_' "$out/fuzz.log"); echo "fuzz: $n fuzzers clean"; add "$n" 0
    else tail -30 "$out/fuzz.log"; echo "fuzz: a finding (see above)"; add 0 1; fi
  else
    echo "fuzz: clang is missing (make deps): counted as a failure"; add 0 1
  fi
fi

if [ -z "${MOONADM_NO_E2E:-}" ] && ls tests/e2e/*_spec.lua >/dev/null 2>&1; then
  echo "== e2e on the lab (real etcd, kube-apiserver, kube-controller-manager, kube-scheduler)"
  if [ ! -x .lab/bin/kube-apiserver ]; then
    echo "e2e: the lab's binaries are missing (make lab-bins): counted as a failure"; add 0 1
  else
    trap '[ -z "$child" ] || { kill -TERM "$child" 2>/dev/null; wait "$child"; }; exit 130' INT TERM
    export MOONADM_E2E_RUN=$$-$(date +%s)
    # The crash points and kill moments crash_spec.lua and kill_spec.lua sample: seeded by the commit
    # (its first 8 hex digits), so this run tries what CI tries for this commit; MOONADM_CRASH_SEED=N
    # (printed here) reproduces a sample, e.g. another commit's.
    if [ -z "${MOONADM_CRASH_SEED:-}" ] && head=$(git -C "$top" rev-parse HEAD 2>/dev/null); then
      export MOONADM_CRASH_SEED=$((16#${head:0:8}))
      echo "e2e: crash sample seed $MOONADM_CRASH_SEED (commit ${head:0:12}); MOONADM_CRASH_SEED=$MOONADM_CRASH_SEED make test reproduces it"
    elif [ -n "${MOONADM_CRASH_SEED:-}" ]; then
      echo "e2e: crash sample seed $MOONADM_CRASH_SEED (from MOONADM_CRASH_SEED)"
    fi
    exclude=()
    [ -n "${MOONADM_LONG:-}" ] || exclude=(--exclude-pattern='^long_')  # long_*_spec.lua only with make test-long
    rc=0
    run_bg tests/busted.sh --output=utfTerminal --helper=tests/e2e/timing.lua --pattern=_spec "${exclude[@]}" tests/e2e > "$out/e.log" 2>&1 || rc=$?
    cat "$out/e.log"
    add_busted e2e "$out/e.log" "$rc"
  fi
fi

if [ -n "$extra" ]; then
  echo "== checks run before the tests ($extra)"
  if [ -r "$extra" ]; then
    while read -r p f what; do
      if [[ $p =~ ^[0-9]+$ && $f =~ ^[0-9]+$ ]]; then echo "$what: $p passed, $f failed"; add "$p" "$f"
      elif [ -n "$p" ]; then echo "$extra: unreadable line '$p $f $what': counted as a failure"; add 0 1; fi
    done < "$extra"
  else
    echo "$extra is missing: counted as a failure"; add 0 1
  fi
fi

echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
