"""Print one line per (workload, variant) from `klineage gate --json` files."""

import json
import sys

for path in sys.argv[1:]:
    try:
        reports = json.load(open(path))
    except (OSError, ValueError) as exc:
        print(f"{path}: unreadable ({exc})")
        continue
    if isinstance(reports, dict):
        reports = [reports]
    times = {}
    for r in reports:
        t = (r.get("timing") or {}).get("median_s")
        times[r.get("kernel")] = t
        sol = r.get("sol") or {}
        gbps = sol.get("achieved_gbps")
        print(f"{r.get('workload'):20s} {r.get('kernel'):8s} {r.get('verdict'):14s} "
              f"{(t or 0) * 1e3:10.4f} ms  {gbps or 0:8.1f} GB/s  {str(r.get('reason'))[:90]}")
    if times.get("naive") and times.get("expert"):
        print(f"{'':20s} speedup {times['naive'] / times['expert']:.2f}x")
