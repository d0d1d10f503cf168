"""The forward loop (DESIGN.md §1 step 6): retrieve skills, materialize them one by one under the
gate within a budget, keep the best; and the baselines it is benchmarked against."""

from klineage.optimize.loop import (
    CandidateGated,
    OptimizeFinished,
    OptimizeOptions,
    OptimizeResult,
    StartGated,
    default_inputs,
    optimize,
)
from klineage.optimize.methods import METHODS, MethodInputs

__all__ = [
    "METHODS",
    "CandidateGated",
    "MethodInputs",
    "OptimizeFinished",
    "OptimizeOptions",
    "OptimizeResult",
    "StartGated",
    "default_inputs",
    "optimize",
]
