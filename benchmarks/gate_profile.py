"""Where one gate run spends its time: seconds per progress phase and the trusted side's hottest
functions (cProfile, cumulative), for one kernel of one workload.

A diagnostic, not a claim: it prints to the terminal and writes nothing. The kernel's runner is
another process, so its time shows up here as time spent waiting on the pipe.

    python benchmarks/gate_profile.py examples/workloads/cuda/add_rmsnorm [--kernel expert] [--top 30]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import pstats
import time
from pathlib import Path

from _bench import fmt_clock

from klineage.gate import GateOptions, run_gate
from klineage.workload import load_kernel, load_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", type=Path)
    parser.add_argument("--kernel", default="expert")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--backend", default=None, help="e.g. null (default: the kernel language's)")
    args = parser.parse_args()
    workload = load_workload(args.workload)
    kernel = load_kernel(workload, args.kernel)
    options = GateOptions(backend=args.backend)
    run_gate(workload, kernel, options=options)  # build, ceilings, runner cached: the second run is seen

    phases: list[tuple[float, str]] = []

    def progress(stage: str, detail: str) -> None:
        phases.append((time.perf_counter(), f"{stage}: {_family(detail)}"))

    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    report = run_gate(workload, kernel, options=options, on_progress=progress)
    profiler.disable()
    finished = time.perf_counter()
    print(f"{workload.name}/{args.kernel}: {report.verdict.value} in {finished - started:.2f} s "
          f"({report.reason or 'no reason'})")
    if report.timing:
        t = report.timing
        print(f"timing: median {t.median_s * 1e3:.3f} ms by the trusted clocks, round trip (median) "
              f"{t.wall_median_s * 1e3:.3f} ms, {t.samples} timed calls ({t.reps_per_trial} per trial)")
        print(f"clock: {fmt_clock(t.clock)}")
    totals: dict[str, list[float]] = {}
    marks = [*phases, (finished, "end")]
    for (when, name), (after, _) in itertools.pairwise(marks):
        totals.setdefault(name, []).append(after - when)
    print(f"\n{'phase':<48} {'calls':>6} {'total s':>8} {'per call ms':>12}")
    for name, spans in sorted(totals.items(), key=lambda kv: -sum(kv[1])):
        print(f"{name:<48} {len(spans):>6} {sum(spans):>8.3f} {1e3 * sum(spans) / len(spans):>12.3f}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(args.top)
    print(out.getvalue())
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


def _family(detail: str) -> str:
    """A progress detail without its counters, so repeated phases add up under one name."""
    words = [w for w in detail.split() if not any(c.isdigit() for c in w)]
    return " ".join(words)[:40]


if __name__ == "__main__":
    main()
