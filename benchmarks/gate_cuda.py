"""CUDA gate benchmark on one GPU: naive vs expert on every CUDA example, through the full gate.

One table: median times, paired speedup (95% CI), achieved GB/s or TFLOP/s, share of the
measured ceiling (copy bandwidth or bf16 matmul rate), torch's own op timed the same way
(events, L2 flushed, rotated inputs), the spread of re-measuring the expert (paired), and the
gate's throughput (candidates gated per minute with every check on). Written to
benchmarks/results/ with the date and device.

    python benchmarks/gate_cuda.py [--only softmax,gemm_bf16] [--throughput-runs 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

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

from klineage.backends.cuda import CudaBackend
from klineage.executors import LocalExecutor
from klineage.gate import GateOptions, run_gate
from klineage.workload import KernelState, generate_inputs, load_kernel, load_workload


def _torch_ops():
    import torch
    import torch.nn.functional as F

    def add_rmsnorm(i, p):
        r = i["x"] + i["residual"]
        return F.rms_norm(r, (r.shape[-1],), i["w"], p["eps"]), r

    return {
        "add_rmsnorm": add_rmsnorm,
        "softmax": lambda i, p: torch.softmax(i["x"], -1),
        "layernorm": lambda i, p: F.layer_norm(i["x"], (i["x"].shape[-1],), i["w"], i["b"], p["eps"]),
        "row_sum": lambda i, p: i["x"].sum(-1),
        "silu_and_mul": lambda i, p: F.silu(i["gate_up"][:, : i["gate_up"].shape[1] // 2])
        * i["gate_up"][:, i["gate_up"].shape[1] // 2:],
        "gemm_bf16": lambda i, p: torch.matmul(i["A"], i["B"].T),
    }


def time_torch_op(name: str, folder) -> float | None:
    """Median ms of torch's own op, timed like the gate: events, L2 flush, 3 rotated input sets."""
    import torch

    from klineage.workload.reference import _as_torch

    op = _torch_ops().get(name)
    if op is None:
        return None
    workload = load_workload(folder)
    sets = [_as_torch(generate_inputs(workload, dict(workload.axes), seed), "cuda") for seed in (7, 8, 9)]
    flush = torch.empty(torch.cuda.get_device_properties(0).L2_cache_size // 2, dtype=torch.int32,
                        device="cuda")
    times = []
    for index in range(45):
        inputs = sets[index % 3]
        flush.fill_(index)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        op(inputs, workload.params)
        end.record()
        torch.cuda.synchronize()
        if index >= 5:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def throughput(folder, runs: int) -> tuple[float, str]:
    """Distinct candidates gated per minute, every check and the profile on.

    Each candidate is the expert with a unique comment, so nothing comes from the build cache:
    the candidates compile in parallel (LocalExecutor), then are gated one after another, each in
    a runner of its own (gate v2: the kernel runs only in the sandboxed runner).
    """
    workload = load_workload(folder)
    base = KernelState.from_spec(load_kernel(workload, "expert"))
    run_gate(workload, load_kernel(workload, "expert"))  # ceilings cached, the runner built
    tag = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as scratch:
        specs = [base.with_source(f"{base.source}\n// throughput candidate {i} {tag}\n")
                 .materialize(Path(scratch) / f"c{i}", workload) for i in range(runs)]
        start = time.perf_counter()
        LocalExecutor().prebuild(CudaBackend(), specs)
        built = time.perf_counter()
        reports = [run_gate(workload, spec) for spec in specs]
        elapsed = time.perf_counter() - start
    bad = [r.reason for r in reports if not r.accepted]
    if bad:
        raise SystemExit(f"throughput candidates were not accepted: {bad[0]}")
    stage = {name: statistics.mean(s.seconds for r in reports for s in r.stages if s.name == name)
             for name in ("static", "correctness")}
    detail = (f"{runs} candidates in {elapsed:.1f} s: parallel compile {built - start:.1f} s, then per "
              f"candidate {statistics.mean(r.gate_seconds for r in reports):.2f} s (static "
              f"{stage['static']:.2f} s, sandbox incl. checks + profile {stage['correctness']:.2f} s)")
    return 60.0 * runs / elapsed, detail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--throughput-runs", type=int, default=10)
    args = parser.parse_args()
    backend = CudaBackend()
    ceilings = backend.ceilings(None, remeasure=True)  # same conditions as the runs
    folder = REPO / "examples" / "workloads" / "cuda"
    table = []

    def add_row(row) -> None:
        torch_ms = time_torch_op(row.workload, folder / row.workload)
        expert_ms = row.expert.timing.median_s * 1e3 if row.expert.timing else None
        versus = f"{torch_ms:.3f} ({torch_ms / expert_ms:.2f}x)" if torch_ms and expert_ms else "-"
        table.append([row.workload, row.naive.verdict.value, row.expert.verdict.value,
                      fmt_ms(row.naive), fmt_ms(row.expert), fmt_speedup(row.expert),
                      fmt_rate(row.expert), fmt_bound(row.expert), versus, fmt_repeat(row.repeat)])
        print("| " + " | ".join(table[-1]) + " |", flush=True)

    rows = gate_examples(folder, GateOptions(), only=[s for s in args.only.split(",") if s],
                         on_row=add_row)
    text = header("Gate benchmark, CUDA", f"{backend.platform()} ({ceilings.details.get('device')})")
    text += (f"- measured ceilings: copy {ceilings.bandwidth_gbps:,.0f} GB/s, bf16 matmul "
             f"{ceilings.compute_gflops / 1e3:,.0f} TFLOP/s, L2 {ceilings.cache_bytes >> 20} MiB\n\n")
    text += markdown_table(["workload", "naive", "expert", "naive ms", "expert ms",
                            "speedup (paired, 95% CI)", "expert rate", "expert % of ceiling",
                            "torch ms (torch/expert)", "re-measure spread"], table)
    if args.throughput_runs:
        lines = []
        for name in [r.workload for r in rows if r.workload != "gemm_bf16"][:2]:
            rate, detail = throughput(folder / name, args.throughput_runs)
            lines.append(f"- {name}: {rate:.1f} candidates/min (goal ≥20); {detail}")
            print(lines[-1], flush=True)
        text += "\n\nGate throughput (distinct candidates, all checks on, profile on):\n" + "\n".join(lines)
    print(text)
    print(f"\nwritten to {write_result('gate_cuda', text)}")


if __name__ == "__main__":
    main()
