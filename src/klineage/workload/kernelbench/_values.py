"""The ``init`` an imported tensor declares, from values the problem's own code drew.

The rule (docs/workloads.md, "Imported workloads"), on the values ``get_inputs()`` or the
Model's default initialisation produced at the benchmark sizes under seed 0:

* integers: ``randint:MIN:MAX+1``; bools: ``bernoulli``;
* floats all equal to one value c (LayerNorm weights 1, biases 0): ``uniform:c-0.5:c+0.5``,
  so a kernel that ignores the tensor cannot pass;
* floats with mean within 0.05 of 0 and standard deviation within 5% of 1 (``torch.randn``):
  ``normal``;
* other floats: ``uniform:MIN:MAX`` over the observed range, rounded outward to 4 significant
  digits (``torch.rand`` gives 0..1; ``nn.Linear`` gives ±1/sqrt(in_features)).
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
        return (f"uniform:{_round(low - 0.5, -1)}:{_round(low + 0.5, 1)}",
                f"constant {low:g}: widened to ±0.5 so the tensor must be read")
    if abs(stats["mean"]) < 0.05 and abs(stats["std"] - 1.0) < 0.05:
        return "normal", "standard normal values"
    return f"uniform:{_round(low, -1)}:{_round(high, 1)}", "the observed range"


def _round(value: float, direction: int) -> str:
    """``value`` to 4 significant digits, rounded away from the range's inside."""
    if value == 0:
        return "0"
    scale = 10 ** (math.floor(math.log10(abs(value))) - 3)
    rounded = (math.ceil if direction > 0 else math.floor)(value / scale) * scale
    return f"{rounded:.4g}"
