"""FlashInfer-Bench datasets (Definitions, Workloads, Solutions) as klineage workloads and
kernels: ``klineage import flashinfer-bench``; gate reports back as FlashInfer-Bench Traces:
``klineage export flashinfer-trace``. Rules: docs/workloads.md, "Imported from FlashInfer-Bench"."""

from klineage.workload.flashinfer.importer import DefinitionOutcome, import_flashinfer_bench

__all__ = ["DefinitionOutcome", "import_flashinfer_bench"]
