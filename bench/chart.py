#!/usr/bin/env python3
"""bench/results/latest.json -> a PNG: medians of both tools per row (log scale) and the ratio kubeadm/moonadm."""
import json
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src, dst = sys.argv[1], sys.argv[2]
res = json.load(open(src))
rows = [r for r in res["rows"] if (r.get("moonadm") or {}).get("median") is not None]
rows = [r for r in rows if r.get("unit") == "s" or r.get("ratio") is not None]
labels = [r["title"] + ("" if r.get("unit") == "s" else " [%s]" % r["unit"]) for r in rows]
m = [r["moonadm"]["median"] for r in rows]
k = [(r.get("kubeadm") or {}).get("median") for r in rows]
ratio = [r.get("ratio") for r in rows]

h = max(4, 0.42 * len(rows) + 1.5)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(16, h), gridspec_kw={"width_ratios": [3, 2]}, sharey=True)
y = list(range(len(rows)))
bw = 0.4
ax1.barh([i - bw / 2 for i in y], [abs(v) if v else 0 for v in m], bw, label="moonadm", color="#2a7ab9")
ax1.barh([i + bw / 2 for i in y], [abs(v) if v else 0 for v in k], bw, label="kubeadm v1.35.4", color="#d9822b")
for i, r in enumerate(rows):
    for off, t in ((-bw / 2, r["moonadm"]), (bw / 2, r.get("kubeadm") or {})):
        if t.get("min") is not None and t.get("max") is not None and t["min"] > 0:
            ax1.plot([t["min"], t["max"]], [i + off, i + off], color="black", lw=0.8)
ax1.set_xscale("log")
ax1.set_yticks(y)
ax1.set_yticklabels(labels, fontsize=8)
ax1.invert_yaxis()
ax1.set_xlabel("median (seconds, or the unit in brackets); whiskers min..max; log scale")
ax1.legend(loc="best", fontsize=8)
ax1.grid(axis="x", which="both", alpha=0.3)

colors = ["#3a9d3a" if (v or 0) >= 1 else "#c0392b" for v in ratio]
ax2.barh(y, [v or 0 for v in ratio], color=colors)
for i, v in enumerate(ratio):
    if v:
        ax2.text(v, i, " %.2f" % v, va="center", fontsize=7)
ax2.axvline(1, color="black", lw=0.8)
ax2.axvline(2, color="grey", ls="--", lw=0.8)
ax2.axvline(10, color="grey", ls=":", lw=0.8)
ax2.set_xscale("log")
ax2.set_xlabel("ratio kubeadm / moonadm (>1: moonadm better; dashed 2x, dotted 10x targets)")
ax2.grid(axis="x", which="both", alpha=0.3)
h = res.get("host", {})
la = res.get("load_start") or []
fig.suptitle("moonadm %s vs kubeadm %s - %s cpus, load at start %s - %s" % (
    h.get("commit", "?"), h.get("kubeadm_version", "?"), h.get("cpus", "?"),
    " ".join("%.1f" % x for x in la), res.get("started", "")), fontsize=10)
fig.tight_layout()
fig.savefig(dst, dpi=110)
print("bench: chart written to %s" % dst)
