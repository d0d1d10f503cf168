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

Held-out workloads are examples/heldout/<suite>/ (never mined). The cells' runs, bench.json and
cassettes stay under W/cells/; the table is written to benchmarks/results/bench_llm-<date>.md.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from _bench import REPO, header, markdown_table, write_result

from klineage.bench import bench
from klineage.config import ApiConfig, Brains, Config
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


def run_cell(work: Path, suite: str, method: str, workload: str, budget: str, repeat: int,
             base_url: str | None, model: str, replay: Path | None) -> Path:
    cell = work / "cells" / f"{method}-{workload}-r{repeat}"
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
    result = bench(HELD_OUT / suite / workload, Library.open(work / "library"), [method], options,
                   runs_root=cell / "runs", seed=repeat, say=lambda s: print(s, flush=True))
    (cell / "bench.json").write_text(json.dumps(result.record, indent=1))
    print(json.dumps(result.record["results"][0], indent=1)[:3000])
    return cell


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
    t = sub.add_parser("table")
    t.add_argument("--work", type=Path, required=True)
    t.add_argument("--model-name", required=True, help="what answered, as the table names it")
    t.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.work, args.suite, quick=not args.full)
    elif args.step == "run":
        run_cell(args.work, args.suite, args.method, args.workload, args.budget, args.repeat,
                 args.base_url, args.model, args.replay)
    else:
        print(table(args.work, args.model_name, None if args.no_write else REPO / "benchmarks"))


if __name__ == "__main__":
    main()
