"""Mining benchmark: `mine --brain rules` on every CPU example expert, into one fresh library.

Prints (and writes to benchmarks/results/) one row per workload: steps accepted / rejected, how
the walk stopped, the paired naive→expert speedup along the lineage, cards lifted and admitted.

    python benchmarks/mine_cpu.py [--only rmsnorm,softmax] [--library DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _bench import REPO, header, markdown_table, write_result

from klineage.backends.cpu import CpuBackend
from klineage.mining import MineOptions, mine
from klineage.workload import load_kernel, load_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--library", type=Path, default=None)
    args = parser.parse_args()
    only = [s for s in args.only.split(",") if s]
    scratch = Path(tempfile.mkdtemp(prefix="klineage-mine-"))
    library = args.library or scratch / "library"
    folder = REPO / "examples" / "workloads" / "cpu"
    rows = []
    for path in sorted(p for p in folder.iterdir() if (p / "workload.toml").is_file()):
        if only and path.name not in only:
            continue
        workload = load_workload(path)
        print(f"mining {workload.name} ...", flush=True)
        result = mine(workload, load_kernel(workload, "expert"), scratch / "runs", library,
                      MineOptions())
        s = result.summary()
        speedup = f"{s['lineage_speedup']:.2f}x" if s["lineage_speedup"] else "-"
        rows.append([s["workload"], f"{s['steps_accepted']} / {s['steps_rejected']}",
                     ", ".join(s["features_removed"]), s["stop_reason"], speedup,
                     str(s["cards_lifted"]), str(s["cards_admitted"]),
                     ", ".join(f"{c['feature']} {c['effect']:.2f}x" + (" (admitted)" if c["admitted"] else "")
                               for c in s["cards"]) or "-"])
        print("| " + " | ".join(rows[-1]) + " |", flush=True)
    text = header("Mining benchmark, CPU (rules brain)", f"{CpuBackend().platform()}")
    text += f"- library: {library}\n\n"
    text += markdown_table(["workload", "steps accepted / rejected", "removed (in order)", "stopped because",
                            "naive→expert (paired)", "cards lifted", "cards admitted", "cards"], rows)
    print(text)
    print(f"\nwritten to {write_result('mine_cpu', text)}")


if __name__ == "__main__":
    main()
