"""Where the trusted side puts a job's buffers in the shared arenas, and how it freshens inputs.

Outputs sit between guard regions with canary bytes in their last page; inputs of one size form
an ``InputSet``. Before every timed call a random share of every input's blocks is redrawn, so a
result cache is never right; which blocks and their values come from randomness that never
leaves the trusted process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from klineage.backends._arenas import PAGE
from klineage.backends.base import Device
from klineage.workload.dtypes import dtype_info
from klineage.workload.model import Workload

__all__ = ["CANARY", "GUARD", "InputSet", "Output", "TimingPlan", "arena_sizes", "footprint", "freshen",
           "inputs_of", "nbytes", "set_count"]

CANARY = 0xC5
GUARD = 16 * PAGE
"""Inaccessible bytes before and after every output (on CPU; canaries are checked on both)."""
FRESH_BLOCK = 64
"""Elements per redrawn block; 1 block in ``FRESH_SHARE`` is redrawn before each timed call."""
FRESH_SHARE = 64


class TimingPlan(BaseModel):
    """How a job times: ``GateOptions``' timing fields and the platform's cache size."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    trials: int
    target_trial_s: float
    warmup_s: float
    max_reps: int
    min_sets: int
    max_sets: int
    max_footprint_bytes: int
    cache_bytes: int
    """Last-level cache: the rotated input sets together exceed twice this."""
    compare_s: float
    min_pairs: int
    max_pairs: int
    seed: int
    """Seeds the bootstrap of a comparison's confidence interval."""
    modeled: bool = False
    """The backend's runner is klineage's own model (the null backend): its reading is the
    model's time, so there is no clock to cross-check and nothing to calibrate."""


@dataclass
class Output:
    offset: int
    nbytes: int
    span: int
    """Bytes from offset to the guard page: the tail past nbytes holds canary bytes."""


@dataclass
class InputSet:
    """Inputs for one size (in the shared input arena) and the output layout for it."""

    axes: dict[str, int]
    inputs: list[Any]
    in_offsets: list[int]
    outputs: list[Output]
    seed: int
    fresh: list[tuple[Any, Any] | None] = field(default_factory=list)
    """Per input, the blocks redrawn for the last call and their original values."""
    mirror: list[Any] = field(default_factory=list)
    """Where the runner could write inputs (GPU memory): our own copy, compared after each call."""
    views: dict[int, list[Any]] = field(default_factory=dict)
    """Output views per arena (by id), made once: a timed call should cost us little."""
    blocks: list[list[Any]] = field(default_factory=list)
    """Per input, its blocks as rows: in the arena, then in the mirror (if any)."""


def freshen(device: Device, workload: Workload, bufs: InputSet, generator: Any) -> list[tuple[Any, Any]]:
    """Redraw a random share of every input's blocks; returns what was drawn, per input.

    The blocks redrawn for the previous call go back to their base values first, so every call
    differs from the base inputs by its own draw alone, and a kept call's inputs can be rebuilt.
    Base values are read from our own copy where the runner could have written the inputs.
    """
    if not bufs.blocks:
        bufs.blocks = [[_blocks(view), *([_blocks(bufs.mirror[i])] if bufs.mirror else [])]
                       for i, view in enumerate(bufs.inputs)]
    drawn = []
    for index, spec in enumerate(workload.inputs):
        targets = bufs.blocks[index]
        blocks = targets[0]
        previous = bufs.fresh[index]
        if previous is not None:
            for target in targets:
                target[previous[0]] = previous[1]
        picked = device.pick_blocks(len(blocks), FRESH_SHARE, generator)
        originals = targets[-1][picked]
        values = device.draw(spec, (max(1, len(blocks) // FRESH_SHARE), blocks.shape[1]), generator)
        for target in targets:
            target[picked] = values
        bufs.fresh[index] = (picked, originals)
        drawn.append((picked, values))
    return drawn


def inputs_of(device: Device, bufs: InputSet, drawn: list[tuple[Any, Any]]) -> list[Any]:
    """The inputs a kept call saw, rebuilt from the base values and what it drew."""
    rebuilt = []
    for view, (picked, values), current in zip(bufs.inputs, drawn, bufs.fresh, strict=True):
        copy = device.clone(view)
        blocks = _blocks(copy)
        if current is not None:
            blocks[current[0]] = current[1]
        blocks[picked] = values
        rebuilt.append(copy)
    return rebuilt


def _blocks(view: Any) -> Any:
    """The whole blocks of an input as rows (a view); a small input is one element a row."""
    flat = view.reshape(-1)
    count = flat.shape[0]
    width = FRESH_BLOCK if count >= FRESH_BLOCK * FRESH_SHARE else 1
    return flat[:count - count % width].reshape(-1, width)


def set_count(workload: Workload, timing: TimingPlan) -> int:
    """How many rotated input sets timing uses: enough to exceed twice the last-level cache."""
    per_set = max(_set_bytes(workload, dict(workload.axes)), 1)
    wanted = math.ceil(2 * timing.cache_bytes / per_set) if timing.cache_bytes else 1
    count = max(timing.min_sets, min(wanted, timing.max_sets,
                                        timing.max_footprint_bytes // per_set))
    return max(count, 1)


def arena_sizes(workload: Workload, timing: TimingPlan) -> tuple[int, int]:
    """(input arena, output arena) bytes for the largest layout a session makes."""
    def sizes(axes: dict[str, int], sets: int) -> tuple[int, int]:
        inputs = sum(nbytes(s, axes) + 64 for s in workload.inputs)
        outputs = sum(-(-max(nbytes(s, axes), 1) // PAGE) * PAGE + GUARD for s in workload.outputs)
        return sets * inputs, GUARD + sets * outputs

    layouts = [sizes(axes, 2) for axes in workload.shapes()]
    layouts.append(sizes(dict(workload.axes), set_count(workload, timing)))
    return max(i for i, _ in layouts), max(o for _, o in layouts)


def nbytes(spec: Any, axes: dict[str, int]) -> int:
    return math.prod(spec.dims(axes)) * dtype_info(spec.dtype).numpy.itemsize


def footprint(workload: Workload, sets: list[InputSet]) -> int:
    return sum(_set_bytes(workload, s.axes) for s in sets)


def _set_bytes(workload: Workload, axes: dict[str, int]) -> int:
    return sum(nbytes(s, axes) for s in (*workload.inputs, *workload.outputs))
