#!/bin/sh
# make bench: moonadm vs the reference kubeadm (.lab/bin/kubeadm), side by side in one run.
# Writes bench/results/latest.json, a dated copy, latest.txt (the table) and latest.png (the chart).
# Environment: see bench/README.md (BENCH_REPS, BENCH_ONLY, BENCH_LAB, BENCH_SCALE, ...).
set -eu
cd "$(dirname "$0")/.."
[ -x bin/moonadm ] || { echo "bench: bin/moonadm is missing: run make" >&2; exit 1; }
[ -x "${BENCH_KUBEADM:-.lab/bin/kubeadm}" ] || { echo "bench: .lab/bin/kubeadm is missing: run make lab-bins" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is missing: apt-get install time" >&2; exit 1; }
start=$(date +%s)
bin/moonadm lua bench/bench.lua
out=${BENCH_OUT:-bench/results}
# The chart: python3 + matplotlib (Debian: python3-matplotlib).
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
# Without one, latest.png (an earlier run's) goes: no chart is better than one that shows another run,
# and no dated copy is made under this run's name.
if "$PY" -c 'import matplotlib' 2>/dev/null; then
  "$PY" bench/chart.py "$out/latest.json" "$out/latest.png"
  cp "$out/latest.png" "$out/$(ls -t "$out" | grep -m1 'Z\.json$' | sed 's/\.json$/.png/')"
else
  rm -f "$out/latest.png"
  echo "bench: no chart (latest.png removed, it showed an earlier run): apt-get install python3-matplotlib" >&2
fi
echo "bench: done in $(( $(date +%s) - start ))s"
