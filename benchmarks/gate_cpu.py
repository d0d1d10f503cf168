"""CPU gate benchmark: naive vs expert on every CPU example, through the full gate.

Prints (and writes to benchmarks/results/) one table: median times, the paired speedup with its
95% interval, achieved rate and share of the measured bound, the gate's own seconds per run,
and the spread of measuring the expert twice (paired, same worker). For sgemm it also times
numpy's matmul at the same thread count, the reference point the expert is held to.

    python benchmarks/gate_cpu.py [--threads N] [--only sgemm,softmax]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _bench import (
    REPO,
    fmt_bound,
    fmt_ms,
    fmt_rate,
    fmt_repeat,
    fmt_speedup,
    gate_examples,
    header,
    markdown_table,
    write_result,
)
from threadpoolctl import threadpool_limits

from klineage.backends.cpu import CpuBackend
from klineage.gate import GateOptions
from klineage.workload import load_workload


def numpy_sgemm_gflops(m: int, n: int, k: int, threads: int) -> float:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    with threadpool_limits(threads):
        a @ b
        times = []
        for _ in range(15):
            start = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - start)
    return 2 * m * n * k / float(np.median(times)) / 1e9


def of_memcpy(report, ceilings) -> str:
    """The share of a plain memcpy's bandwidth (the bound itself also counts streaming stores)."""
    sol = report.sol
    if not sol or sol.limiter != "memory" or not sol.achieved_gbps:
        return "-"
    return f"{sol.achieved_gbps / ceilings.details['memcpy_gbps'] * 100:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    backend = CpuBackend()
    ceilings = backend.ceilings(args.threads, remeasure=True)  # same conditions as the runs
    options = GateOptions(threads=args.threads)
    sgemm_axes = load_workload(REPO / "examples" / "workloads" / "cpu" / "sgemm").axes
    numpy_before = numpy_sgemm_gflops(sgemm_axes["M"], sgemm_axes["N"], sgemm_axes["K"], args.threads)
    rows = gate_examples(REPO / "examples" / "workloads" / "cpu", options,
                         only=[s for s in args.only.split(",") if s])
    numpy_after = numpy_sgemm_gflops(sgemm_axes["M"], sgemm_axes["N"], sgemm_axes["K"], args.threads)
    table = []
    for row in rows:
        table.append([row.workload, row.naive.verdict.value, row.expert.verdict.value,
                      fmt_ms(row.naive), fmt_ms(row.expert), fmt_speedup(row.expert),
                      fmt_rate(row.expert), fmt_bound(row.expert), of_memcpy(row.expert, ceilings),
                      f"{row.naive.gate_seconds:.1f} / {row.expert.gate_seconds:.1f}",
                      fmt_repeat(row.repeat)])
    text = header("Gate benchmark, CPU", f"{backend.platform()}, {args.threads} threads")
    text += (f"- measured ceilings: copy {ceilings.bandwidth_gbps:.1f} GB/s (memcpy "
             f"{ceilings.details['memcpy_gbps']:.1f}, streaming-store copy "
             f"{ceilings.details['streaming_copy_gbps']:.1f}), fp32 FMA "
             f"{ceilings.compute_gflops:.1f} GFLOP/s, LLC {ceilings.cache_bytes >> 20} MiB\n\n")
    text += markdown_table(["workload", "naive", "expert", "naive ms", "expert ms",
                            "speedup (paired, 95% CI)", "expert rate", "expert % of bound",
                            "expert % of memcpy",
                            "gate s (naive / expert)", "re-measure spread"], table)
    sgemm = next((r for r in rows if r.workload == "sgemm"), None)
    if sgemm and sgemm.expert.sol and sgemm.expert.sol.achieved_gflops:
        reference = max(numpy_before, numpy_after)
        share = sgemm.expert.sol.achieved_gflops / reference * 100
        text += (f"\n\nsgemm: expert {sgemm.expert.sol.achieved_gflops:.1f} GFLOP/s vs numpy matmul "
                 f"{reference:.1f} GFLOP/s (best of before/after the gate runs: {numpy_before:.1f}, "
                 f"{numpy_after:.1f}) at {args.threads} threads = {share:.0f}% (target ≥60%)\n")
    print(text)
    print(f"\nwritten to {write_result('gate_cpu', text)}")


if __name__ == "__main__":
    main()
