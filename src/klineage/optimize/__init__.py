"""The forward loop (DESIGN.md §1 step 6): retrieve skills, materialize them one by one under the
gate within a budget, keep the best; and the baselines it is benchmarked against."""

from klineage.optimize.loop import (
    DEFAULT_BUDGET,
    CandidateGated,
    OptimizeFinished,
    OptimizeMeta,
    OptimizeOptions,
    OptimizeResult,
    StartGated,
    default_inputs,
    optimize,
)
from klineage.optimize.methods import METHODS, MethodInputs

__all__ = [
    "DEFAULT_BUDGET",
    "METHODS",
    "CandidateGated",
    "MethodInputs",
    "OptimizeFinished",
    "OptimizeMeta",
    "OptimizeOptions",
    "OptimizeResult",
    "StartGated",
    "default_inputs",
    "optimize",
]
