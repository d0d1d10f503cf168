"""Benchmarking the methods (DESIGN.md §1 step 7): the same workloads, gate and budget for each,
leave-one-out fairness, fresh seeds per repeat, geometric means that count failures honestly."""

from klineage.bench._fairness import leave_one_out, suite_workloads, without_workload
from klineage.bench.run import BenchMeta, BenchResult, bench, budget_to_fraction, resume_bench, summarize

__all__ = ["BenchMeta", "BenchResult", "bench", "budget_to_fraction", "leave_one_out", "resume_bench",
           "suite_workloads", "summarize", "without_workload"]
