"""Workloads: the model, TOML loading, input generation and the reference."""

from klineage.workload.inputs import allocate_outputs, generate_inputs, poison_value
from klineage.workload.languages import LANGUAGES, KernelLanguage, language_of_file
from klineage.workload.loader import load_kernel, load_reference, load_workload
from klineage.workload.model import KernelSpec, TensorSpec, Workload
from klineage.workload.reference import check_not_degenerate, run_reference
from klineage.workload.state import KernelState

__all__ = [
    "LANGUAGES",
    "KernelLanguage",
    "KernelSpec",
    "KernelState",
    "TensorSpec",
    "Workload",
    "allocate_outputs",
    "check_not_degenerate",
    "generate_inputs",
    "language_of_file",
    "load_kernel",
    "load_reference",
    "load_workload",
    "poison_value",
    "run_reference",
]
