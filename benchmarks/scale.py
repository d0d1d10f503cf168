"""Scale benchmark: distinct candidates gated per minute against the number of workers.

Each row gates the same number of fresh candidates (one kernel with a unique comment each, so
every one is compiled and gated, none comes from a cache) through an executor: the local one,
then a Ray cluster started here with N workers (N CPUs for builds; with --device cuda, N GPUs,
one timing actor each), or an existing cluster (--address, one row at its own size). On the CPU
backend timing stays one slot per machine, so extra workers speed up the builds only.

    python benchmarks/scale.py [--workload PATH] [--variant naive] [--candidates 8]
                               [--workers 1,2] [--device cpu|cuda] [--address HOST:PORT] [--quick]

``--workers ""`` gives the local row alone (Ray is imported only for its rows).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from _bench import REPO, header, markdown_table, write_result

from klineage.executors import Executor, LocalExecutor
from klineage.gate import GateOptions
from klineage.gate.session import GateTask, run_task
from klineage.workload import KernelState, Workload, load_kernel, load_workload


def gate_fresh(executor: Executor, workload: Workload, variant: str, count: int,
               device: str) -> tuple[float, Counter[str]]:
    """Seconds to build and gate ``count`` never-seen candidates; their verdicts (a loaded
    machine's 'unmeasurable' counts as gated: the gate ran)."""
    base = KernelState.from_spec(load_kernel(workload, variant))
    tag = uuid.uuid4().hex
    options = GateOptions(trials=5)
    with tempfile.TemporaryDirectory() as folder:
        specs = [base.with_source(base.source + f"\n/* scale {tag} {i} */\n").materialize(
            Path(folder) / str(i), workload) for i in range(count)]
        backend = options.backend_for(base.language)
        tasks = [GateTask(workload, spec, backend, options) for spec in specs]
        started = time.perf_counter()
        executor.prebuild(backend, specs)
        verdicts = Counter(report.verdict.value for _, report in executor.map(run_task, tasks, device))
        return time.perf_counter() - started, verdicts


def row(name: str, workers: str, executor: Executor, workload: Workload,
        args: argparse.Namespace) -> list[str]:
    print(f"gating {args.candidates} fresh candidates on {name} with {workers} worker(s) ...")
    seconds, verdicts = gate_fresh(executor, workload, args.variant, args.candidates, args.device)
    return [name, workers, str(executor.slots(args.device)), str(args.candidates),
            f"{seconds:.1f}", f"{args.candidates / seconds * 60:.1f}",
            ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=Path,
                        help="default: examples/workloads/<device>/softmax")
    parser.add_argument("--variant", default="naive")
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--address", help="an existing Ray cluster's head (one row at its size)")
    parser.add_argument("--quick", action="store_true", help="the workload's quick sizes")
    args = parser.parse_args()
    workload = load_workload(args.workload or REPO / "examples/workloads" / args.device / "softmax",
                             quick=args.quick)

    table = [row("local", "1", LocalExecutor(), workload, args)]
    counts = [int(w) for w in args.workers.split(",") if w.strip()]
    if args.address or counts:
        import ray

        from klineage.executors.ray import RayExecutor
    if args.address:
        executor = RayExecutor(args.address)
        table.append(row("ray", str(int(ray.cluster_resources().get("CPU", 0))), executor,
                         workload, args))
    for workers in [] if args.address else counts:
        gpus = {"num_gpus": workers} if args.device == "cuda" else {}
        ray.init(num_cpus=workers if args.device == "cpu" else os.cpu_count(), **gpus,
                 include_dashboard=False, log_to_driver=False)
        table.append(row("ray", str(workers), RayExecutor(), workload, args))
        ray.shutdown()
    language = load_kernel(workload, args.variant).language
    text = header("Scale: distinct candidates gated per minute",
                  f"{GateOptions().backend_for(language).platform()}, {os.cpu_count()} cores")
    text += (f"- workload: {workload.name} ({'quick' if args.quick else 'full'} sizes), fresh "
             f"copies of its {args.variant} kernel, each built and gated with its profile\n\n")
    text += markdown_table(["executor", "workers", "timing slots", "candidates", "seconds",
                            "candidates / min", "verdicts"], table)
    print(text)
    print(f"\nwritten to {write_result('scale', text)}")


if __name__ == "__main__":
    main()
