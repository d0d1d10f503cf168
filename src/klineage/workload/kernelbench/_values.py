"""The ``init`` an imported tensor declares, from values the problem's own code drew.

The rule (docs/workloads.md, "Imported workloads"), on the values ``get_inputs()`` draws at the
quick sizes, or the Model's default initialisation at the benchmark sizes, each pooled over
seeds 0, 1, ... up to 4096 values while that takes under 2 s:

* integers: ``randint:MIN:MAX+1``; bools: ``bernoulli``;
* floats all equal to one value c (LayerNorm weights 1, biases 0): ``uniform:c-0.5:c+0.5``,
  so a kernel that ignores the tensor cannot pass;
* floats with mean within 0.05 of 0 and standard deviation within 5% of 1 (``torch.randn``):
  ``normal``;
* other floats: ``uniform:MIN:MAX`` over the observed range, rounded outward on a grid of a
  hundredth of the range's order of magnitude (``torch.rand`` gives 0..1; ``nn.Linear(256, n)``
  gives ±0.063 for its ±1/16).
"""

from __future__ import annotations

import math

__all__ = ["ValueStats", "init_for"]

ValueStats = dict[str, float]
"""min, max, mean, std of a tensor's values (floats for every dtype)."""


def init_for(dtype: str, stats: ValueStats) -> tuple[str, str]:
    """(init string, the rule that chose it, in words)."""
    low, high = stats["min"], stats["max"]
    if dtype == "bool":
        return "bernoulli", "bool"
    if not dtype.startswith(("float", "bfloat")):
        if high <= low:
            return f"randint:{int(low) - 1}:{int(high) + 2}", f"constant {int(low)}: widened by ±1"
        return f"randint:{int(low)}:{int(high) + 1}", "the observed integer range"
    if high <= low:
        return (f"uniform:{_round(low - 0.5, 1, -1)}:{_round(low + 0.5, 1, 1)}",
                f"constant {low:g}: widened to ±0.5 so the tensor must be read")
    if abs(stats["mean"]) < 0.05 and abs(stats["std"] - 1.0) < 0.05:
        return "normal", "standard normal values"
    span = high - low
    return f"uniform:{_round(low, span, -1)}:{_round(high, span, 1)}", "the observed range"


def _round(value: float, span: float, direction: int) -> str:
    """``value`` on a grid of 1/100 of ``span``'s power of ten, rounded away from the inside."""
    grid = 10.0 ** (math.floor(math.log10(span)) - 2)
    steps = (math.ceil if direction > 0 else math.floor)(round(value / grid, 6))
    return f"{steps * grid:.6g}"
