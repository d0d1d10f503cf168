"""Method benchmark on an example suite: klineage skills vs the none / memory / rules-table /
expert-source baselines.

Builds a library by mining every example expert of the suite with the rules brain, and the memory
baseline's store from its own forward runs on the same workloads with the budget each mine spent
(or reuses --library and --memory), then runs `klineage bench` on examples/workloads/<suite> with
leave-one-out fairness, and writes a Markdown table to benchmarks/results/bench_<suite>-<date>.md
with machine and date.

    python benchmarks/bench_suite.py --suite cpu [--quick] [--budget gate_runs=6] [--only a,b]
    python benchmarks/bench_suite.py --suite cuda --library LIB --memory MEM --methods klineage,none,memory
    python benchmarks/bench_suite.py --suite cuda --workdir W --prepare-only   # library + memory in W,
        # for a later call with --library W/library --memory W/memory (one device call each)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from _bench import REPO, header, markdown_table, write_result

from klineage.bench import bench
from klineage.gate import GateOptions
from klineage.mine import MineOptions, mine
from klineage.optimize import OptimizeOptions
from klineage.optimize.memory import build_memory, mine_spent
from klineage.runs import Budget
from klineage.skills.library import Library
from klineage.workload import load_kernel, load_workload

METHODS = "klineage,none,memory,rules-table,expert-source"


def build_library(suite: Path, target: Path, scratch: Path, quick: bool, gate: GateOptions,
                  only: list[str] | None = None) -> list[Path]:
    """Mine every expert of the suite (or those ``only`` names) into ``target``; the mine runs."""
    runs = []
    for path in sorted(p for p in suite.iterdir() if (p / "workload.toml").is_file()):
        if only and path.name not in only:
            continue
        workload = load_workload(path, quick=quick)
        print(f"mining {workload.name} ...", flush=True)
        runs.append(mine(workload, load_kernel(workload, "expert"), scratch / "mine-runs", target,
                         MineOptions(gate=gate)).run.path)
    return runs


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value else "-"


def render(record: dict, library: Path, memory: Path | None, name: str) -> str:
    text = header(f"Method benchmark, {name.upper()} (rules brain, leave-one-out)", record["machine"])
    text += (f"- suite: {record['suite']}\n- budget per run: {record['budget']}; repeats: "
             f"{record['repeats']}; base seed: {record['seed']}\n- library: {library}\n"
             f"- memory: {memory}\n\n")
    rows = [[r["workload"], r["method"], str(r["repeat"]), r["status"], _x(r["speedup_vs_start"]),
             _x(r["speedup_vs_expert"]),
             f"{r['sol_fraction']:.0%}" if r["sol_fraction"] is not None else "-",
             f"{r['correct_candidates']}/{r['failed_candidates']}",
             str(r["budget_to_90pct"]["gate_runs"]) if r["budget_to_90pct"] else "-",
             (r.get("best_state") or "-")[:10], r["reason"].replace("|", "/")]
            for r in record["results"]]
    text += markdown_table(["workload", "method", "repeat", "status", "vs start", "vs expert", "SOL",
                            "correct/failed", "gate runs to 90%", "best kernel", "stopped because"], rows)
    summary = [[s["method"], _x(s["geomean_speedup_vs_start"]), _x(s["geomean_speedup_vs_expert"]),
                f"{s['mean_sol_fraction']:.0%}" if s["mean_sol_fraction"] is not None else "-",
                "; ".join(f"{f['workload']}#{f['repeat']}" for f in s["failures"]) or "-"]
               for s in record["summary"]]
    text += "\n\nSummary (geometric means; a failed run counts as the start kernel, 1.0x):\n\n"
    text += markdown_table(["method", "geomean vs start", "geomean vs expert", "mean SOL", "failures"],
                           summary)
    return text + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", type=Path, default=None, help="reuse a mined library")
    parser.add_argument("--memory", type=Path, default=None,
                        help="reuse a memory store (klineage memory build); needed with --library")
    parser.add_argument("--budget", default="gate_runs=6")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated workloads (a sub-suite)")
    parser.add_argument("--mine", default="",
                        help="comma-separated experts to mine for the library (default: every one)")
    parser.add_argument("--suite", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--compare-s", type=float, default=2.0)
    parser.add_argument("--quick", action="store_true", help="mine and bench at [quick_axes]")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the library, memory and runs go (default: a new temporary folder)")
    parser.add_argument("--prepare-only", action="store_true",
                        help="stop once the library and the memory are built")
    args = parser.parse_args()
    examples = REPO / "examples" / "workloads" / args.suite
    scratch = args.workdir or Path(tempfile.mkdtemp(prefix="klineage-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    gate = GateOptions(trials=5, compare_s=args.compare_s)  # one gate for mining, memory and bench
    library, memory = args.library, args.memory
    if library is None:
        library = scratch / "library"
        mine_runs = build_library(examples, library, scratch, args.quick, gate,
                                  [m for m in args.mine.split(",") if m])
        if "memory" in args.methods.split(",") and memory is None:
            print("building the memory baseline's store ...", flush=True)
            memory = scratch / "memory"
            build_memory([mine_spent(p) for p in mine_runs], OptimizeOptions(gate=gate),
                         scratch / "memory-runs", memory, say=lambda s: print(f"memory: {s}", flush=True))
    if args.prepare_only:
        print(f"library: {library}\nmemory: {memory}")
        return
    suite = examples
    if args.only:
        suite = scratch / "suite"
        suite.mkdir()
        for name in args.only.split(","):
            shutil.copytree(examples / name, suite / name)
    options = OptimizeOptions(budget=Budget.parse(args.budget), memory=memory, gate=gate)
    result = bench(suite, Library.open(library), args.methods.split(","), options,
                   repeats=args.repeats, runs_root=scratch / "runs",
                   say=lambda s: print(s, flush=True), quick=args.quick)
    text = render(result.record, library, memory, args.suite + (" (quick sizes)" if args.quick else ""))
    print(text)
    print(f"bench.json: {result.run.path / 'bench.json'}")
    print(f"written to {write_result(f'bench_{args.suite}', text)}")


if __name__ == "__main__":
    main()
