"""The paper's claim with a real model: methods × held-out workloads at equal budget, LLM brain.

Three steps, so that every (method, workload, repeat) cell can run against its own model endpoint
(a model that remembers its earlier answers must not carry them from one cell into the next):

    # offline knowledge, the same effort for both: klineage's cards from mining the example
    # experts (rules brain), and the memory baseline's store from its own forward runs on the same
    # workloads with the budget each mine spent
    python benchmarks/bench_llm.py prepare --work W [--full]
    # one cell: bench one method on one held-out workload through an OpenAI-compatible endpoint,
    # recording every exchange to a cassette (or replaying one, offline: --replay C)
    python benchmarks/bench_llm.py run --work W --method klineage --workload matmul_ikj \
        --base-url http://127.0.0.1:8801/v1 --model NAME --budget calls=4,gate_runs=12
    # the table: per cell, final speedup over start and over expert, correct and failed
    # candidates, calls and tokens to 90% of the final gain; per method, the failure-penalised
    # geomean (a failed run counts 1.0x); best-so-far curves against calls (text and PNG)
    python benchmarks/bench_llm.py table --work W --model-name "..." [--out benchmarks/results]

Where the model and the GPU are on different machines (docs/scale.md), the cells gate through a
spool folder in lock-step rounds: ``rounds`` advances every unfinished cell of a plan (a TOML
file of ``[[cell]]`` tables: method, workload, repeat, base_url) to its next gate job, each cell
in its own process, then stops; ``klineage worker S --once`` on the GPU machine gates all of
them; the next ``rounds`` takes the results up (a cell's brain is never asked again for what it
answered, ``docs/scale.md``):

    python benchmarks/bench_llm.py rounds --work W --suite cuda --spool S --cells plan.toml \
        --model NAME --budget calls=4,gate_runs=8

``run --spool S`` is one cell's step of a round (exit status 3: waiting for the spool).

Held-out workloads are examples/heldout/<suite>/ (never mined). The cells' runs, bench.json and
cassettes stay under W/cells/; the table is written to benchmarks/results/bench_llm-<date>.md.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

from _bench import REPO, header, markdown_table, write_result

from klineage.bench import bench, resume_bench
from klineage.config import ApiConfig, Brains, Config
from klineage.errors import GateWaiting
from klineage.executors import LocalExecutor, using
from klineage.executors.spool import SpoolExecutor
from klineage.gate import GateOptions
from klineage.mine import MineOptions, mine
from klineage.optimize import OptimizeOptions
from klineage.optimize.memory import build_memory, mine_spent
from klineage.runs import Budget
from klineage.skills.library import Library
from klineage.workload import load_kernel, load_workload

TRAINING = REPO / "examples" / "workloads"
HELD_OUT = REPO / "examples" / "heldout"
GATE = GateOptions(trials=5, compare_s=2.0)
OFFLINE_GATE = GateOptions(trials=3, compare_s=0.5)
"""Mining and the memory's runs: the demo's shorter timing schedule, every check the same."""


def prepare(work: Path, suite: str, quick: bool) -> None:
    """Mine every example expert of the suite into W/library, then build W/memory with the same
    budget per workload (both with the rules brain: the offline phase is the same for both)."""
    folders = sorted(p for p in (TRAINING / suite).iterdir() if (p / "workload.toml").is_file())
    mine_runs = []
    for folder in folders:
        workload = load_workload(folder, quick=quick)
        print(f"mining {workload.name} ...", flush=True)
        result = mine(workload, load_kernel(workload, "expert"), work / "mine-runs", work / "library",
                      MineOptions(gate=OFFLINE_GATE, admit_on=tuple(f for f in folders if f != folder)))
        mine_runs.append(result.run.path)
    print("building the memory baseline's memory ...", flush=True)
    store = build_memory([mine_spent(p) for p in mine_runs], OptimizeOptions(gate=OFFLINE_GATE),
                         work / "memory-runs", work / "memory", say=lambda s: print(s, flush=True))
    cards = Library.open(work / "library").cards()
    print(f"library: {len(cards)} admitted cards ({', '.join(sorted({c.feature for c in cards}))}); "
          f"memory: {len(store.observations)} observations; budgets {store.budgets}")


def cell_folder(work: Path, method: str, workload: str, repeat: int) -> Path:
    return work / "cells" / f"{method}-{workload}-r{repeat}"


def run_cell(work: Path, suite: str, method: str, workload: str, budget: str, repeat: int,
             base_url: str | None, model: str, replay: Path | None, spool: Path | None = None) -> Path:
    """One cell, to its end; with ``spool``, as far as its next gate job the spool has not
    answered (``GateWaiting``), resuming the cell's bench where an earlier round stopped it."""
    cell = cell_folder(work, method, workload, repeat)
    cell.mkdir(parents=True, exist_ok=True)
    cassette = cell / "cassette.jsonl"
    if replay is None and base_url is None:
        raise SystemExit("run: give --base-url (a live endpoint) or --replay CASSETTE")
    config = Config(brains=Brains(openai=ApiConfig(base_url=base_url, model=model, timeout_s=1800.0,
                                                   retries=0, max_tokens=16000)))
    options = OptimizeOptions(
        budget=Budget.parse(budget), brain="replay" if replay else "openai", gate=GATE,
        config=config, record=None if replay else cassette, replay=replay,
        memory=work / "memory")
    library = Library.open(work / "library")
    say = lambda s: print(s, flush=True)  # noqa: E731
    stopped = [p.parent for p in sorted((cell / "runs").glob("*/run.json"))
               if not (p.parent / "bench.json").is_file()]
    with using(SpoolExecutor(spool, wait=False) if spool else LocalExecutor()):
        if stopped:
            result = resume_bench(stopped[-1], library, options, say=say)
        else:
            result = bench(HELD_OUT / suite / workload, library, [method], options,
                           runs_root=cell / "runs", seed=repeat, say=say)
    (cell / "bench.json").write_text(json.dumps(result.record, indent=1))
    print(json.dumps(result.record["results"][0], indent=1)[:3000])
    return cell


def rounds(work: Path, suite: str, plan: Path, spool: Path, budget: str, model: str) -> int:
    """Advance every unfinished cell of ``plan`` to its next gate job, side by side (each its own
    process and model endpoint); returns how many cells are not finished yet."""
    cells = tomllib.loads(plan.read_text()).get("cell", [])
    if not cells:
        raise SystemExit(f"rounds: {plan} lists no [[cell]]")
    running = {}
    for cell in cells:
        method, workload, repeat = cell["method"], cell["workload"], int(cell.get("repeat", 0))
        folder = cell_folder(work, method, workload, repeat)
        if (folder / "bench.json").is_file():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, __file__, "run", "--work", str(work), "--suite", suite, "--method",
                method, "--workload", workload, "--repeat", str(repeat), "--budget", budget,
                "--model", model, "--spool", str(spool)]
        argv += ["--replay", cell["replay"]] if "replay" in cell else ["--base-url", cell["base_url"]]
        log = open(folder / "rounds.log", "a")  # noqa: SIM115 (closed below, once it exits)
        running[folder.name] = (subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT), log)
    rows = []
    for name, (process, log) in running.items():
        status = process.wait()
        log.close()
        rows.append([name, {0: "finished", 3: "waiting"}.get(status, f"failed (exit {status}, "
                                                                       f"see {name}/rounds.log)")])
    print(markdown_table(["cell", "after this round"], rows))
    pending = len(list((spool / "pending").glob("*.json"))) if spool.is_dir() else 0
    left = sum(row[1] != "finished" for row in rows)
    if pending:
        print(f"\n{pending} gate job(s) wait in {spool}: on the GPU machine run "
              f"`klineage worker {spool} --once`, bring {spool}/done back, then run rounds again")
    return left


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value else "-"


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _curve_text(curve: list[dict]) -> str:
    """Best-so-far after each brain call: 'calls:speedup' pairs."""
    seen: dict[int, float] = {}
    for point in curve:
        seen[point.get("calls") or 0] = point["best_speedup"]
    return " ".join(f"{calls}:{speedup:.2f}" for calls, speedup in sorted(seen.items()))


def table(work: Path, model_name: str, out: Path | None) -> str:
    cells = sorted((work / "cells").glob("*/bench.json"))
    records = [json.loads(p.read_text()) for p in cells]
    rows = [r for record in records for r in record["results"]]
    if not rows:
        raise SystemExit(f"table: no finished cells under {work / 'cells'}")
    budget = {record["budget"] for record in records}
    text = header("Methods with a real model on held-out workloads", records[0]["machine"])
    text += (f"- model: {model_name}, answering through the relay (`shared/tools/relay_llm.py`), one "
             f"fresh session per cell\n- budget per run: {', '.join(sorted(budget))}; offline "
             f"knowledge: cards mined from examples/workloads (rules brain), memory from its own "
             f"runs on the same workloads with the budget each mine spent\n- cells: {len(rows)}\n\n")
    body = []
    for r in sorted(rows, key=lambda r: (r["workload"], r["method"], r["repeat"])):
        to90 = r["budget_to_90pct"] or {}
        tokens, calls = to90.get("tokens"), to90.get("calls")
        body.append([r["workload"], r["method"], str(r["repeat"]), r["status"], _x(r["speedup_vs_start"]),
                     _x(r["speedup_vs_expert"]), f"{r['correct_candidates']}/{r['failed_candidates']}",
                     f"{calls:.0f}" if calls is not None else "-", f"{tokens:,.0f}" if tokens else "-",
                     _curve_text(r["curve"]), r["reason"].replace("|", "/")[:80]])
    text += markdown_table(["workload", "method", "rep", "status", "vs start", "vs expert",
                            "correct/failed", "calls to 90%", "tokens to 90%",
                            "best so far (calls:speedup)", "stopped because"], body)
    methods = sorted({r["method"] for r in rows})
    summary = []
    for method in methods:
        mine_rows = [r for r in rows if r["method"] == method]
        summary.append([method, str(len(mine_rows)),
                        _x(_geomean([r["speedup_vs_start"] for r in mine_rows])),
                        _x(_geomean([r["speedup_vs_expert"] for r in mine_rows if r["speedup_vs_expert"]])),
                        str(sum(r["status"] != "ok" for r in mine_rows))])
    text += "\n\nPer method (geometric means; a failed run counts as the start kernel, 1.0x):\n\n"
    text += markdown_table(["method", "runs", "geomean vs start", "geomean vs expert", "failed runs"],
                           summary)
    plot = _plot(rows, work / "curves.png")
    text += f"\n\nBest-so-far curves: {plot}\n"
    if out is not None:
        print(f"written to {write_result('bench_llm', text)}")
    return text


def _plot(rows: list[dict], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = sorted({r["workload"] for r in rows})
    color = {m: f"C{i}" for i, m in enumerate(sorted({r["method"] for r in rows}))}
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4), squeeze=False)
    for ax, workload in zip(axes[0], workloads, strict=True):
        cells = [r for r in rows if r["workload"] == workload]
        for r in sorted(cells, key=lambda r: (r["method"], r["repeat"])):
            points = sorted({(p.get("calls") or 0): p["best_speedup"] for p in r["curve"]}.items())
            if points:
                ax.step([c for c, _ in points], [s for _, s in points], where="post",
                        color=color[r["method"]], label=f"{r['method']} #{r['repeat']}")
        ax.set(title=workload, xlabel="brain calls", ylabel="best speedup over start", yscale="log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--suite", default="cpu")
    p.add_argument("--full", action="store_true", help="mine at the full sizes (default: quick)")
    r = sub.add_parser("run")
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--suite", default="cpu")
    r.add_argument("--method", required=True)
    r.add_argument("--workload", required=True)
    r.add_argument("--budget", default="calls=4,gate_runs=12")
    r.add_argument("--repeat", type=int, default=0)
    r.add_argument("--base-url")
    r.add_argument("--model", default="relay-model")
    r.add_argument("--replay", type=Path)
    r.add_argument("--spool", type=Path, help="gate through this spool folder, stopping (exit 3) "
                                               "at the first job it has not answered")
    o = sub.add_parser("rounds")
    o.add_argument("--work", type=Path, required=True)
    o.add_argument("--suite", default="cpu")
    o.add_argument("--cells", type=Path, required=True, help="the plan: [[cell]] tables")
    o.add_argument("--spool", type=Path, required=True)
    o.add_argument("--budget", default="calls=4,gate_runs=12")
    o.add_argument("--model", default="relay-model")
    t = sub.add_parser("table")
    t.add_argument("--work", type=Path, required=True)
    t.add_argument("--model-name", required=True, help="what answered, as the table names it")
    t.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.work, args.suite, quick=not args.full)
    elif args.step == "run":
        try:
            run_cell(args.work, args.suite, args.method, args.workload, args.budget, args.repeat,
                     args.base_url, args.model, args.replay, args.spool)
        except GateWaiting as exc:
            print(f"waiting: {exc}", flush=True)
            sys.exit(3)
    elif args.step == "rounds":
        left = rounds(args.work, args.suite, args.cells, args.spool, args.budget, args.model)
        print(f"{left} cell(s) not finished")
    else:
        print(table(args.work, args.model_name, None if args.no_write else REPO / "benchmarks"))


if __name__ == "__main__":
    main()
