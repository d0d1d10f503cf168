"""The validation gate: compile → correctness → profile → speed of light (DESIGN.md §4)."""

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
    "run_gate",
]
