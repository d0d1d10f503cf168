"""Sizes the importer finds by running the module: ``[quick_axes]`` and ``[[check_shapes]]``.

Probe subprocess only (it runs the problem's code). A size counts only when the Model runs
there and every input, weight and output has the shape the fitted expressions give.
"""

from __future__ import annotations

import time
from types import ModuleType

from klineage.workload import _expr
from klineage.workload.kernelbench._runs import ProblemError, build, forward

__all__ = ["check_shapes", "quick_axes"]

QUICK_SECONDS = 0.25
"""A quick size's reference (build the Model, draw inputs, forward) takes at most this long."""
MAX_CHECK_SHAPES = 6
"""Kept check shapes at most: each costs the gate three checked calls per candidate."""
_FACTORS = (4096, 1024, 256, 64, 16, 4, 1)
_SCALED_FROM = 16  # axes below this (kernel sizes, channels of 3) keep their file value


def quick_axes(module: ModuleType, bench: dict[str, int], axes: list[str],
               shapes: dict[str, list]) -> tuple[dict[str, int], str]:
    """The largest of the benchmark sizes divided by 4096, 1024, ... 1 whose reference runs
    within ``QUICK_SECONDS`` on one CPU thread; the note says how long it took. A size is not
    tried when the last one's time, times the growth of every axis, passes 4 x that."""
    best, best_seconds, note, errors = None, 0.0, "", []
    for factor in _FACTORS:
        values = _scaled(bench, axes, factor)
        if best is not None and values == best:
            continue
        if best is not None and best_seconds * _growth(best, values) > 4 * QUICK_SECONDS:
            break  # the next size would run for seconds (or not fit in memory): never try it
        problem, seconds = _timed_run(module, values, shapes)
        if not problem and seconds > QUICK_SECONDS:
            # a first call's warm-up (torch's first forward in a process took 333 ms at 1 x 1 x 1
            # on a quiet machine, and one-element calls became the quick size): the better of two
            seconds = min(seconds, _timed_run(module, values, shapes)[1])
        if problem:
            where = " ".join(f"{a}={values[a]}" for a in axes) or "the file's sizes"
            errors.append(f"at {where}: {problem}")
            continue
        if seconds > QUICK_SECONDS and best is not None:
            break
        best, best_seconds = values, seconds
        note = f"reference {seconds * 1e3:.0f} ms on 1 CPU thread"
        if seconds > QUICK_SECONDS:
            # The smallest size that runs is kept however slow (a busy machine, a first call's
            # warm-up): with none kept, the import failed with an IndexError.
            break
    if best is None:
        shown = errors[0] if len(errors) == 1 else f"{errors[0]}; ...; {errors[-1]}"
        raise ProblemError(f"the Model ran at none of the sizes tried ({shown})")
    return {a: best[a] for a in axes}, note


def _timed_run(module: ModuleType, values: dict[str, int], shapes: dict[str, list]
               ) -> tuple[str | None, float]:
    started = time.perf_counter()
    problem = _runs_at(module, values, shapes)
    return problem, time.perf_counter() - started


def check_shapes(module: ModuleType, bench: dict[str, int], quick: dict[str, int], axes: list[str],
                 shapes: dict[str, list], ranges: dict[int, tuple[int, int]]
                 ) -> tuple[list[dict[str, int]], list[str]]:
    """Smaller and odd sizes where the module runs; notes say which candidates did not, and why.

    ``ranges``: integer inputs (by position) and the (low, high) the gate will draw; a size where
    get_inputs() draws a narrower range (indices into a smaller table) is not kept.
    """
    kept: list[dict[str, int]] = []
    notes: list[str] = []
    for candidate in _candidates(bench, quick, axes):
        if candidate in kept or candidate == {a: bench[a] for a in axes}:
            continue
        if len(kept) == MAX_CHECK_SHAPES:
            break
        values = {**bench, **candidate}
        problem = _runs_at(module, values, shapes) or _ranges_hold(module, values, ranges)
        label = " ".join(f"{k}={v}" for k, v in candidate.items())
        if problem:
            notes.append(f"{label}: {problem}")
        else:
            kept.append(candidate)
    return kept, notes


def _growth(before: dict[str, int], after: dict[str, int]) -> float:
    """How much more work ``after`` may be, if work grows with every size (a bound, not a fit)."""
    growth = 1.0
    for name, value in after.items():
        growth *= value / before[name]
    return growth


def _scaled(bench: dict[str, int], axes: list[str], factor: int) -> dict[str, int]:
    return {k: max(1, v // factor) if k in axes and v >= _SCALED_FROM else v for k, v in bench.items()}


def _candidates(bench: dict[str, int], quick: dict[str, int], axes: list[str]) -> list[dict[str, int]]:
    """Odd sizes near the quick ones, distinct per axis; small odd sizes; each axis at 1; half
    and a quarter of the quick sizes (these keep divisibility: heads that must divide a width);
    then each axis alone one odd step below its quick size (the others stay: an index input's
    table)."""
    movable = [a for a in axes if bench[a] >= _SCALED_FROM] or list(axes)
    def odd(value: int) -> int:
        return max(1, value if value % 2 else value - 1)
    near = {a: odd(quick[a] - 2 * i) if a in movable else quick[a] for i, a in enumerate(axes)}
    small = {a: min(odd(3 + 2 * i), bench[a]) if a in movable else quick[a]
             for i, a in enumerate(axes)}
    ones = [dict(small, **{a: 1}) for a in movable]
    halves = [{a: max(1, quick[a] // d) if a in movable else quick[a] for a in axes} for d in (2, 4)]
    alone = [dict({b: quick[b] for b in axes}, **{a: odd(quick[a] - 1)}) for a in movable]
    return [near, small, *ones, *halves, *alone]


def _runs_at(module: ModuleType, values: dict[str, int], shapes: dict[str, list]) -> str | None:
    """None when the Model runs at ``values`` with every shape as fitted; else the reason."""
    try:
        run = build(module, values)
        outputs = forward(run)
    except Exception as exc:  # the module does not run at this size
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
    tensors = {f"in:{i}": t for i, t in enumerate(run.inputs)}
    tensors.update({f"w:{k}": t for k, t in run.model.state_dict().items()})
    tensors.update({f"out:{i}": t for i, t in enumerate(outputs)})
    for key, expressions in shapes.items():
        want = [d if isinstance(d, int) else int(_expr.evaluate(d, values)) for d in expressions]
        got = list(tensors[key].shape) if key in tensors else None
        if got != want:
            return f"{key} has shape {got}, the fitted shape gives {want}"
        if any(d < 1 for d in want):
            return f"{key} would have an empty dimension {want}"
    return None


def _ranges_hold(module: ModuleType, values: dict[str, int], ranges: dict[int, tuple[int, int]],
                 draws: int = 1024, seconds: float = 2.0) -> str | None:
    """None when get_inputs() at ``values`` draws each integer input over its whole declared
    range (pooled over seeds until it does); else which input draws less."""
    seen = {index: (None, None) for index in ranges}
    started = time.perf_counter()
    for seed in range(draws):
        run = build(module, values, seed=seed)
        for index in ranges:
            tensor = run.inputs[index]
            low, high = seen[index]
            low = min(int(tensor.min()), low if low is not None else int(tensor.min()))
            high = max(int(tensor.max()), high if high is not None else int(tensor.max()))
            seen[index] = (low, high)
        if all(seen[i][0] <= ranges[i][0] and seen[i][1] >= ranges[i][1] for i in ranges):
            return None
        if time.perf_counter() - started > seconds:
            break
    index = next(i for i in ranges if not (seen[i][0] <= ranges[i][0] and seen[i][1] >= ranges[i][1]))
    return (f"integer input {index} draws {seen[index][0]}..{seen[index][1]} here; the gate draws "
            f"{ranges[index][0]}..{ranges[index][1]} (its range follows an axis)")
