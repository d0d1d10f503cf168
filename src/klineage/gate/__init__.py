"""The validation gate: compile → correctness → profile → speed of light (DESIGN.md §4)."""

from klineage.gate._load import others_load
from klineage.gate._noise import free_threads
from klineage.gate.report import (
    ClockCheck,
    Comparison,
    GateReport,
    SpeedOfLight,
    StageResult,
    TimingStats,
    Verdict,
)
from klineage.gate.runner import GateOptions, compare_kernels, run_gate
from klineage.gate.sandbox import Limits
from klineage.gate.session import GateSession

__all__ = [
    "ClockCheck",
    "Comparison",
    "GateOptions",
    "GateReport",
    "GateSession",
    "Limits",
    "SpeedOfLight",
    "StageResult",
    "TimingStats",
    "Verdict",
    "compare_kernels",
    "free_threads",
    "others_load",
    "run_gate",
]
