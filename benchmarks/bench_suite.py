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
    python benchmarks/bench_suite.py --suite cuda --resume W/runs/<bench run>   # a stopped bench

Killed and started again with the same --workdir, the preparation keeps every finished mine and
resumes the one it stopped in (on a lent device, each call has its own time limit).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from _bench import REPO, header, markdown_table, write_result

from klineage.bench import BenchResult, bench, resume_bench
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
        earlier = _earlier_mine(scratch / "mine-runs", workload.name)
        if earlier is not None and (earlier / "summary.json").is_file():
            print(f"{workload.name}: mined before ({earlier.name}), kept", flush=True)
            runs.append(earlier)
            continue
        print(f"{'resuming the mine of' if earlier else 'mining'} {workload.name} ...", flush=True)
        runs.append(mine(workload, None if earlier else load_kernel(workload, "expert"),
                         scratch / "mine-runs", target, MineOptions(gate=gate), resume=earlier).run.path)
    return runs


def _earlier_mine(root: Path, name: str) -> Path | None:
    """The mine run of workload ``name`` an earlier call of this script left in ``root``."""
    for run in sorted(root.glob(f"*-mine-{name}-*")):
        if json.loads((run / "run.json").read_text()).get("name") == name:
            return run
    return None


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
    parser.add_argument("--resume", type=Path, default=None,
                        help="continue this stopped bench run (its suite, methods and library)")
    parser.add_argument("--heldout", action="store_true",
                        help="bench examples/heldout/<suite> (never mined) instead of the mined suite")
    args = parser.parse_args()
    name = ("heldout-" if args.heldout else "") + args.suite
    gate = GateOptions(trials=5, compare_s=args.compare_s)  # one gate for mining, memory and bench
    say = lambda line: print(line, flush=True)  # noqa: E731
    if args.resume:  # the bench's own suite, methods, library, memory, seed and budget
        finish(resume_bench(args.resume, options=OptimizeOptions(gate=gate), say=say), name)
        return
    examples = REPO / "examples" / "workloads" / args.suite
    scratch = args.workdir or Path(tempfile.mkdtemp(prefix="klineage-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    library, memory = args.library, args.memory
    if library is None:
        library = scratch / "library"
        mine_runs = build_library(examples, library, scratch, args.quick, gate,
                                  [m for m in args.mine.split(",") if m])
        if "memory" in args.methods.split(",") and memory is None:
            memory = scratch / "memory"
            if (memory / "memory.json").is_file():
                print(f"memory: built before ({memory}), kept", flush=True)
            else:
                print("building the memory baseline's store ...", flush=True)
                build_memory([mine_spent(p) for p in mine_runs], OptimizeOptions(gate=gate),
                             scratch / "memory-runs", memory, say=lambda s: say(f"memory: {s}"))
    if args.prepare_only:
        print(f"library: {library}\nmemory: {memory}")
        return
    benched = REPO / "examples" / ("heldout" if args.heldout else "workloads") / args.suite
    suite = benched
    if args.only:
        suite = Path(tempfile.mkdtemp(dir=scratch, prefix="suite-"))  # one per bench: resumable
        for workload in args.only.split(","):
            shutil.copytree(benched / workload, suite / workload)
    options = OptimizeOptions(budget=Budget.parse(args.budget), memory=memory, gate=gate)
    finish(bench(suite, Library.open(library), args.methods.split(","), options, repeats=args.repeats,
                 runs_root=scratch / "runs", say=say, quick=args.quick), name)


def finish(result: BenchResult, name: str) -> None:
    """The table of a finished bench, printed and written to benchmarks/results/."""
    meta = json.loads((result.run.path / "run.json").read_text())
    text = render(result.record, meta["library"], meta.get("memory"),
                  name + (" (quick sizes)" if meta["sizing"] == "quick" else ""))
    print(text)
    print(f"bench.json: {result.run.path / 'bench.json'}")
    print(f"written to {write_result(f'bench_{name}', text)}")


if __name__ == "__main__":
    main()
