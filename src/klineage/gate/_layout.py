"""Where the trusted side puts a job's buffers in the shared arenas, and how it freshens inputs.

Outputs sit between guard regions with canary bytes in their last page; inputs of one size form
an ``InputSet``. Every runner has its own input arena (``InputArenas``), laid out alike and
written alike. Before every timed call a random share of every input's blocks is redrawn, so a
result cache is never right; which blocks and their values come from randomness that never
leaves the trusted process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from klineage.backends._arenas import PAGE, round_up
from klineage.backends.base import Device
from klineage.workload.dtypes import dtype_info
from klineage.workload.model import Workload

__all__ = ["CANARY", "GUARD", "InputArenas", "InputSet", "Output", "TimingPlan", "arena_sizes",
           "canary_regions", "footprint", "freshen", "inputs_of", "nbytes", "set_count"]

CANARY = 0xC5
GUARD = 16 * PAGE
"""Inaccessible bytes before and after every output (on CPU; canaries are checked on both)."""
FRESH_SHARE = 32
"""Before each timed call one element at a random place in every ``FRESH_SHARE`` of each input
is redrawn: every row and tile of 32 elements or more changes on every call, so a kernel that
keeps what it saw has to recompute everything. Whole blocks of 64 elements, one block in 64,
left 98% of the blocks as they were: a kernel that recomputed only the changed blocks was
always exact and timed 2.8x faster than the expert (held-out review, 2026-12-03)."""


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
    """Inputs for one size (at the same offsets in every runner's input arena) and the output
    layout for it."""

    axes: dict[str, int]
    inputs: list[Any]
    """The inputs in the first runner's arena (their sizes and offsets are every arena's)."""
    in_offsets: list[int]
    outputs: list[Output]
    seed: int
    fresh: list[tuple[Any, Any] | None] = field(default_factory=list)
    """Per input, the elements redrawn for the last call and their original values."""
    mirror: list[Any] = field(default_factory=list)
    """Where the runner could write inputs (GPU memory): our own copy, compared after each call."""
    views: dict[int, list[Any]] = field(default_factory=dict)
    """Output views per arena (by id), made once: a timed call should cost us little."""
    blocks: list[list[Any]] = field(default_factory=list)
    """Per input, its elements, flat: in every runner's arena, then in the mirror (if any)."""
    placed: dict[int, list[Any]] = field(default_factory=dict)
    """The inputs in each runner's input arena (by id), in the order the arenas were made."""

    def inputs_in(self, arena: Any) -> list[Any]:
        """The inputs as the runner of ``arena`` sees them."""
        views = self.placed.get(id(arena))
        if views is None:
            raise RuntimeError("internal: an input set is not laid out in this runner's arena")
        return views

    def trusted_inputs(self, arena: Any) -> list[Any]:
        """What a call by the runner of ``arena`` was given, from memory no runner can write: our
        mirror where runners could write their arena (a GPU), else that runner's own arena (read-only
        to every runner). Never another runner's arena."""
        return self.mirror or self.inputs_in(arena)


class InputArenas:
    """One input arena per runner, laid out alike (one offset, every arena) and written alike.

    Both runners of a comparison once mapped one input arena, whose slack past the last set
    nobody checks: a baseline learned that its successor ran beside it (Flush+Reload on the
    shared memfd on a CPU, plain writes to the shared allocation on a GPU) and slowed down, and
    identical code was judged faster (time ratio 0.68 CPU, 0.73 H200; held-out review,
    2026-12-03). Now no byte of input memory is mapped by two runners; our calibration kernel
    has its own too."""

    def __init__(self, device: Device, nbytes: int):
        self.device, self.nbytes = device, nbytes
        self.arenas: list[Any] = []
        self._next = 0

    def add(self, laid_out: list[InputSet], workload: Workload) -> Any:
        """A new runner's arena, holding what is laid out already (``laid_out``: the sets in it)."""
        # One name for every arena: a runner must not learn its role from its mapping's name.
        arena = self.device.arena(self.nbytes, "inputs")
        if self.arenas and self._next:
            first = self.arenas[0]
            self.device.copy_into(arena.region(0, self._next), first.region(0, self._next))
        self.arenas.append(arena)
        for bufs in laid_out:
            bufs.placed[id(arena)] = [arena.view(offset, spec.dims(bufs.axes), dtype_info(spec.dtype).numpy)
                                      for spec, offset in zip(workload.inputs, bufs.in_offsets, strict=True)]
            bufs.blocks = []  # made again, with this arena among the targets of fresh blocks
        return arena

    def reset(self) -> None:
        self._next = 0

    def place(self, spec: Any, axes: dict[str, int], values: Any) -> tuple[int, list[Any]]:
        """Room for one input at one offset in every arena, ``values`` written into each; returns
        the offset and the views, in the order of ``arenas``."""
        if not self.arenas:
            raise RuntimeError("internal: inputs laid out before any runner was started")
        offset = round_up(self._next, 64)
        size = max(nbytes(spec, axes), 1)
        if offset + size > self.arenas[0].nbytes:
            raise RuntimeError(f"internal: input arena too small ({offset + size} > {self.arenas[0].nbytes})")
        self._next = offset + size
        views = [arena.view(offset, spec.dims(axes), dtype_info(spec.dtype).numpy) for arena in self.arenas]
        for view in views:
            self.device.put(view, values)
        return offset, views

    def close(self) -> None:
        for arena in self.arenas:
            arena.close()


def freshen(device: Device, workload: Workload, bufs: InputSet, generator: Any) -> list[tuple[Any, Any]]:
    """Redraw one element at a random place in every ``FRESH_SHARE`` of every input; returns
    what was drawn (places and values), per input.

    The elements redrawn for the previous call go back to their base values first, so every call
    differs from the base inputs by its own draw alone, and a kept call's inputs can be rebuilt.
    Every runner's arena gets the same elements (only what changed is written). Base values are
    read from our own copy where a runner could have written the inputs.
    """
    if not bufs.blocks:
        copies = [*bufs.placed.values(), *([bufs.mirror] if bufs.mirror else [])]
        bufs.blocks = [[_blocks(views[i]) for views in copies] for i in range(len(bufs.inputs))]
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
        values = device.draw(spec, (max(1, len(blocks) // FRESH_SHARE),), generator)
        for target in targets:
            target[picked] = values
        bufs.fresh[index] = (picked, originals)
        drawn.append((picked, values))
    return drawn


def inputs_of(device: Device, bufs: InputSet, drawn: list[tuple[Any, Any]], arena: Any) -> list[Any]:
    """The inputs a kept call by the runner of input arena ``arena`` saw, rebuilt from the base
    values (``InputSet.trusted_inputs``) and what it drew."""
    rebuilt = []
    for view, (picked, values), current in zip(bufs.trusted_inputs(arena), drawn, bufs.fresh, strict=True):
        copy = device.clone(view)
        blocks = _blocks(copy)
        if current is not None:
            blocks[current[0]] = current[1]
        blocks[picked] = values
        rebuilt.append(copy)
    return rebuilt


def _blocks(view: Any) -> Any:
    """An input's elements, flat (a view): ``freshen`` redraws single elements."""
    return view.reshape(-1)


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


def canary_regions(out: Output) -> tuple[tuple[int, int], tuple[int, int]]:
    """The bytes before and after an output that hold canaries: its guard regions (on a GPU no
    page can be made inaccessible, so they are all the runner meets there) and its last page's
    tail. The region before an output is the one after the previous output, or the arena's head."""
    return (out.offset - GUARD, out.offset), (out.offset + out.nbytes, out.offset + out.span + GUARD)
