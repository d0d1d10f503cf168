"""KernelBench problem files (``class Model``, ``get_inputs()``, ``get_init_inputs()``) as
klineage workloads: ``klineage import kernelbench``. Rules: docs/workloads.md, "Imported
workloads"."""

from klineage.workload.kernelbench.importer import ImportOutcome, import_kernelbench, problem_files

__all__ = ["ImportOutcome", "import_kernelbench", "problem_files"]
