"""Mining benchmark: `mine --brain rules` on every example expert of a suite, into one library.

Prints (and writes to benchmarks/results/mine_<suite>-<date>.md) one row per workload: steps
accepted / rejected, how the walk stopped, the paired naive→expert speedup along the lineage,
cards lifted and admitted, and the wall time of the whole mine.

    python benchmarks/mine_examples.py --suite cpu [--only rmsnorm,softmax] [--library DIR]
    python benchmarks/mine_examples.py --suite cuda --compare-s 1 --trials 5   # on a GPU
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _bench import REPO, header, markdown_table, write_result

from klineage.backends import get_backend
from klineage.gate import GateOptions
from klineage.mine import MineOptions, mine
from klineage.workload import load_kernel, load_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--library", type=Path, default=None)
    parser.add_argument("--suite", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--compare-s", type=float, default=2.0)
    args = parser.parse_args()
    options = MineOptions(gate=GateOptions(trials=args.trials, compare_s=args.compare_s))
    only = [s for s in args.only.split(",") if s]
    scratch = Path(tempfile.mkdtemp(prefix="klineage-mine-"))
    library = args.library or scratch / "library"
    folder = REPO / "examples" / "workloads" / args.suite
    rows, details = [], []
    for path in sorted(p for p in folder.iterdir() if (p / "workload.toml").is_file()):
        if only and path.name not in only:
            continue
        workload = load_workload(path)
        print(f"mining {workload.name} ...", flush=True)
        started = time.perf_counter()
        result = mine(workload, load_kernel(workload, "expert"), scratch / "runs", library, options)
        s = result.summary()
        speedup = f"{s['lineage_speedup']:.2f}x" if s["lineage_speedup"] else "-"
        rows.append([s["workload"], f"{s['steps_accepted']} / {s['steps_rejected']}",
                     ", ".join(s["features_removed"]), s["stop_reason"], speedup,
                     str(s["cards_lifted"]), str(s["cards_admitted"]),
                     ", ".join(f"{c['feature']} {c['effect']:.2f}x" + (" (admitted)" if c["admitted"] else "")
                               for c in s["cards"]) or "-",
                     f"{time.perf_counter() - started:.0f} s"])
        print("| " + " | ".join(rows[-1]) + " |", flush=True)
        details.append(_details(workload.name, result))
    text = header(f"Mining benchmark, {args.suite.upper()} (rules brain)",
                  get_backend(args.suite).platform())
    text += (f"- library: {library}\n- gate: trials={args.trials}, paired comparison "
             f"{args.compare_s:g} s\n\n")
    columns = ["workload", "steps accepted / rejected", "removed (in order)", "stopped because",
               "naive→expert (paired)", "cards lifted", "cards admitted", "cards", "mine wall time"]
    text += markdown_table(columns, rows)
    text += "\n## Steps without a card, and admission trials\n\n" + "\n".join(details)
    print(text)
    print(f"\nwritten to {write_result(f'mine_{args.suite}', text)}")


def _details(name: str, result) -> str:
    """Why each step yielded no card (the lift's notes) and every admission trial, per workload."""
    lines = [f"- **{name}**"]
    lines += [f"  - {note}" for note in result.notes]
    for card in result.cards:
        for trial in card.verification:
            lines.append(f"  - card {card.feature} on {trial.target}: {trial.verdict} ({trial.reason[:160]})")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
