"""The probe: run one KernelBench problem file and report, as JSON, what its workload is.

    python -m klineage.workload.kernelbench._probe PROBLEM.py RESULT.json

Runs in its own process (the importer gives it a timeout): the problem file is code. Steps:
find the int constants; vary each one alone from distinct prime probe values to see which tensor
dimensions it drives (``_fit``); constants that drive an input or weight dimension are the axes;
then check determinism and which weights the forward reads, pick ``init`` rules from the values
the problem's own code draws, time the reference for ``[quick_axes]`` and try smaller, odd sizes
for ``[[check_shapes]]``.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from klineage.workload.kernelbench import _fit, _sizes
from klineage.workload.kernelbench._runs import (
    ProblemError,
    build,
    default_state,
    forward,
    input_names,
    int_constants,
    load,
    observe,
    param_names,
    sanitize,
    stats,
)
from klineage.workload.kernelbench._values import init_for

_PRIMES = [11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97]
_STEPS = (1, 2, 3, 5, 7, 11, 16, 23, 41, 60, 97)  # how far each axis moves from its probe value
_SAMPLES = 4096  # default values pooled per weight for its init range
_MAX_BUILDS = 32  # Model builds pooled for weights' values
_MAX_DRAWS = 1024  # get_inputs() calls pooled for inputs' values
_POOL_SECONDS = 2.0


def survey(path: Path) -> dict[str, Any]:
    module = load(path)
    constants = int_constants(path, module)
    torch.set_num_threads(1)
    base, varied = _sweep(module, _prime_probe(constants), list(constants), constants)
    axes = [c for c in constants if _drives_an_input(base, varied[c])]
    stuck = [c for c in constants if not varied[c]]
    fixed = {c: v for c, v in constants.items() if c not in axes}
    probe = {**fixed, **{a: base["values"][a] for a in axes}}
    base, varied = _sweep(module, probe, axes, constants)
    shapes = _shapes(base, varied, axes)
    names = _names(module, base, shapes)
    bench = dict(constants)
    quick, quick_note = _sizes.quick_axes(module, bench, axes, shapes)
    used = _used_weights(module, {**bench, **quick}, names["weights"])
    _check_axes_readable(axes, names, shapes, used)
    params = _params(module, base, varied, names)
    inits = _inits(module, bench, quick, names, used)
    ranges = {i: _randint_bounds(inits[n][0]) for i, n in enumerate(names["inputs"])
              if inits[n][0].startswith("randint:")}
    checks, notes = _sizes.check_shapes(module, bench, quick, axes, shapes, ranges)
    doc = (module.Model.__doc__ or "").strip().splitlines()
    return {"doc": doc[0] if doc else "", "constants": constants, "axes": axes, "fixed": fixed,
            "stuck": [c for c in stuck if c in fixed],
            "names": names, "shapes": shapes, "dtypes": base["obs"]["dtypes"], "used_weights": used,
            "params": params,
            "inits": inits, "quick_axes": quick, "quick_note": quick_note, "check_shapes": checks,
            "check_notes": notes}


def _prime_probe(constants: dict[str, int]) -> dict[str, int]:
    """Distinct primes, given in the order of the file values (a kernel size stays below the
    image size it slides over), so no two constants share a probe value."""
    if len(constants) > len(_PRIMES):
        raise ProblemError(f"has {len(constants)} int constants; the importer probes at most "
                           f"{len(_PRIMES)}")
    ranked = sorted(constants, key=lambda name: constants[name])
    return {name: _PRIMES[rank] for rank, name in enumerate(ranked)}


def _sweep(module: ModuleType, probe: dict[str, int], moving: list[str],
           constants: dict[str, int]) -> tuple[dict, dict[str, list[dict]]]:
    """A base run, then each of ``moving`` varied alone.

    The base is the probe values; if the Model does not run there, the probe values with the
    constants below 8 (a reduction dim, a flag) at their file values; if not there either (a
    head count must divide a width), the file's own values, and each constant then moves to 2,
    3 and 4 times its value and by +1 and +7 instead of by +1 ... +97 (the far moves tell
    ``h//11`` from ``(h-2)//10``, which agree from 19 to 35).
    """
    small = {k: v for k, v in constants.items() if v < 8}
    tries = [probe, {**probe, **small}, dict(constants)]
    first: Exception | None = None
    for values in (t for i, t in enumerate(tries) if t not in tries[:i]):
        try:
            base = {"values": values, "obs": observe(module, values)}
            break
        except ProblemError:
            raise
        except Exception as exc:  # the next try may run
            first = first or exc
    else:
        detail = f"{type(first).__name__}: {first}"
        raise ProblemError(f"Model did not run at the file's sizes: {detail}") from first
    probe = base["values"]
    steps = [lambda v, s=s: v + s for s in _STEPS]
    if probe == constants:
        steps = [lambda v, f=f: v * f for f in (2, 3, 4)] + [lambda v: v + 1, lambda v: v + 7]
    varied: dict[str, list[dict]] = {}
    for name in moving:
        varied[name] = []
        for step in steps:
            values = dict(probe, **{name: step(probe[name])})
            try:
                varied[name].append({"values": values, "obs": observe(module, values)})
            except Exception:  # this value does not run: the others still tell
                continue
    return base, varied


def _drives_an_input(base: dict, runs: list[dict]) -> bool:
    shapes = base["obs"]["shapes"]
    return any(key.startswith(("in:", "w:")) and run["obs"]["shapes"].get(key) != shape
               for run in runs for key, shape in shapes.items())


def _shapes(base: dict, varied: dict[str, list[dict]], axes: list[str]) -> dict[str, list]:
    """Every tensor's shape as a list of axis expressions and literals."""
    shapes: dict[str, list] = {}
    for key, dims in base["obs"]["shapes"].items():
        shapes[key] = []
        for index, dim in enumerate(dims):
            def at(run: dict, key: str = key, index: int = index) -> _fit.Observation:
                got = run["obs"]["shapes"].get(key)
                return run["values"], got[index] if got and len(got) > index else -1
            runs = {a: [at(r) for r in varied[a]] for a in axes}
            driving = _fit.drivers((base["values"], dim), runs)
            observations = [(base["values"], dim), *(o for a in driving for o in runs[a])]
            expression = _fit.fit_dim(observations, driving)
            if expression is None:
                raise ProblemError(f"{_label(key)} dimension {index} depends on "
                                   f"{', '.join(driving)} in a way the importer cannot express")
            shapes[key].append(expression)
    return shapes


def _label(key: str) -> str:
    kind, name = key.split(":", 1)
    return {"in": f"input {name}", "w": f"weight {name!r}", "out": f"output {name}"}[kind]


def _names(module: ModuleType, base: dict, shapes: dict[str, list]) -> dict[str, Any]:
    count = sum(k.startswith("in:") for k in shapes)
    outs = sum(k.startswith("out:") for k in shapes)
    inputs = input_names(module.Model, count)
    taken = set(inputs)
    weights = {}
    for key in (k[2:] for k in shapes if k.startswith("w:")):
        name = sanitize(key)
        while name in taken:
            name += "_w"
        weights[key] = name
        taken.add(name)
    outputs = ["out"] if outs == 1 else [f"out{i}" for i in range(outs)]
    return {"inputs": inputs, "weights": weights, "outputs": outputs}


def _check_axes_readable(axes: list[str], names: dict, shapes: dict[str, list], used: list[str]) -> None:
    """The reference learns the sizes from its inputs: each axis must be one input dim itself."""
    keys = [f"in:{i}" for i in range(len(names["inputs"]))] + [f"w:{k}" for k in used]
    for axis in axes:
        if not any(axis in shapes[k] for k in keys):
            raise ProblemError(f"axis {axis} drives inputs only through expressions "
                               f"({', '.join(str(d) for k in keys for d in shapes[k] if axis in str(d))})"
                               f"; the reference could not read it back")


def _used_weights(module: ModuleType, values: dict[str, int], weights: dict[str, str]) -> list[str]:
    """The state-dict entries the forward reads: changing one must change an output, on one of
    ``_USE_DRAWS`` input draws, bumped up or down. One draw and one bump up missed a Linear's
    bias behind a ReLU at one output element (below zero before and after), and the workload
    left out an input its kernel reads. Refuses a forward that is random (two seeds, two
    answers)."""
    run = build(module, values)
    first = forward(run)
    torch.manual_seed(12345)
    if any(not torch.equal(a, b) for a, b in zip(first, forward(run), strict=True)):
        raise ProblemError("forward gives different outputs on the same inputs (dropout or random "
                           "ops?): no reference can check a kernel against it")
    runs = [run, *(build(module, values, seed=seed) for seed in range(1, _USE_DRAWS))]
    return [key for key in weights if any(_reads(draw, key) for draw in runs)]


_USE_DRAWS = 3


def _reads(run: Any, key: str) -> bool:
    """Whether bumping state-dict entry ``key`` up or down changes an output of ``run``."""
    state = {k: v.clone() for k, v in run.model.state_dict().items()}
    before = forward(run)
    tensor = state[key]
    if tensor.dtype == torch.bool:
        bumps = [~tensor]
    elif tensor.is_floating_point():
        scale = 1 + float(tensor.abs().max()) if tensor.numel() else 1.0
        size = (torch.randn(tensor.shape).abs() + 0.5) * scale
        bumps = [tensor + size, tensor - size]
    else:
        bumps = [tensor + 1, tensor - 1]
    try:
        for bumped in bumps:
            run.model.load_state_dict({**state, key: bumped})
            if any(not torch.equal(a, b) for a, b in zip(before, forward(run), strict=True)):
                return True
        return False
    finally:
        run.model.load_state_dict(state)


def _params(module: ModuleType, base: dict, varied: dict[str, list[dict]], names: dict) -> list[dict]:
    """Init inputs no axis drives: a scalar is one param, a tuple or list of scalars one param a
    item (``window_0``, ``window_1``). The ones an axis drives follow it and are no params."""
    init = base["obs"]["init"]
    labels = param_names(module.Model, len(init))
    taken = {*names["inputs"], *names["weights"].values(), *names["outputs"]}
    params = []
    for index, value in enumerate(init):
        if any(run["obs"]["init"][index] != value for runs in varied.values() for run in runs):
            continue
        if isinstance(value, dict):  # {"tuple": [...]}
            items = next(iter(value.values()))
            entries = [(f"{labels[index]}_{j}", j, v) for j, v in enumerate(items)]
        elif isinstance(value, int | float):
            entries = [(labels[index], None, value)]
        else:  # "<Tensor>", strings, None...
            raise ProblemError(f"init input {index} ({labels[index]}) is {value}: only ints, floats "
                               f"and tuples of them can be imported (they become [params])")
        for name, item, number in entries:
            while name in taken:
                name += "_param"
            taken.add(name)
            params.append({"name": name, "index": index, "item": item, "value": number,
                           "type": type(number).__name__})
    return params


def _inits(module: ModuleType, bench: dict[str, int], quick: dict[str, int], names: dict,
           used: list[str]) -> dict[str, list[str]]:
    """``init`` for each input (values from get_inputs() at the quick sizes) and each weight the
    forward reads (the Model's default initialisation at the benchmark sizes), seed 0."""
    found = {}
    for name, values in _drawn_inputs(module, quick, names["inputs"]).items():
        found[name] = list(init_for(_dtype(values), stats(values)))
    for key, values in _default_values(module, bench, used).items():
        found[names["weights"][key]] = list(init_for(_dtype(values), stats(values)))
    return found


def _randint_bounds(init: str) -> tuple[int, int]:
    """``randint:LO:HI`` -> (LO, HI-1), the values the gate will draw."""
    _, low, high = init.split(":")
    return int(low), int(high) - 1


def _drawn_inputs(module: ModuleType, quick: dict[str, int], names: list[str]) -> dict:
    """Each forward input's values from get_inputs(), pooled over seeds 0, 1, ... as weights are:
    512 indices drawn from 0..999 need not include 0."""
    pooled: dict[str, list] = {name: [] for name in names}
    started = time.perf_counter()
    for seed in range(_MAX_DRAWS):
        short = [n for n in names if sum(v.numel() for v in pooled[n]) < _SAMPLES]
        if not short or (seed and time.perf_counter() - started > _POOL_SECONDS):
            break
        for name, tensor in zip(names, build(module, quick, seed=seed).inputs, strict=True):
            pooled[name].append(tensor.flatten())
    return {name: torch.cat(values) for name, values in pooled.items()}


def _default_values(module: ModuleType, bench: dict[str, int], used: list[str]) -> dict:
    """Each weight's default values, pooled over more seeds (while building the Model is quick)
    until it has ``_SAMPLES`` values: a 128-element bias alone shows its bound only roughly."""
    started = time.perf_counter()
    state = default_state(module, bench, seed=0)
    pooled = {key: [state[key].flatten()] for key in used}
    seconds = time.perf_counter() - started
    for seed in range(1, _MAX_BUILDS):
        short = [k for k in used if sum(v.numel() for v in pooled[k]) < _SAMPLES]
        if not short or seconds * (seed + 1) > _POOL_SECONDS:
            break
        state = default_state(module, bench, seed=seed)
        for key in short:
            pooled[key].append(state[key].flatten())
    return {key: torch.cat(values) for key, values in pooled.items()}


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def main(argv: list[str]) -> int:
    problem, result = Path(argv[1]), Path(argv[2])
    try:
        payload: dict[str, Any] = survey(problem)
    except ProblemError as exc:
        payload = {"error": str(exc)}
    except Exception as exc:  # the problem's own code failed somewhere we did not expect
        where = traceback.extract_tb(exc.__traceback__)[-1]
        payload = {"error": f"{type(exc).__name__}: {exc} "
                            f"({Path(where.filename).name}:{where.lineno})"}
    result.write_text(json.dumps(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
