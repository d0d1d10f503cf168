"""The op trace of a ModelNew kernel: does its forward do the work with torch's own ops?

A fairness rule, not a correctness one: an op-level cheat is still judged correct or not, and
timed, out of its process. The candidate's ops are recorded in a dedicated run of its own
sandboxed runner, with our dispatch mode entered before kernel.py is imported (the host,
``backends/_modelnew_host.py``); the reference's are recorded here, in the trusted process.
Outside the extension's calls only ``GLUE`` may run; inside them, nothing of the reference's
own compute. What this can and cannot catch is in docs/gate.md ("ModelNew kernels").
"""

from __future__ import annotations

import json
import math
import secrets

from klineage.backends.base import Backend, BuildResult
from klineage.backends.modelnew import TRACE_ENV
from klineage.gate.sandbox import Candidate, CandidateFailed, Limits
from klineage.workload import load_reference, run_reference
from klineage.workload.inputs import generate_array
from klineage.workload.model import Workload

__all__ = ["GLUE", "TRACED_CALLS", "traced_cheat"]

TRACED_CALLS = 8
"""The most forward calls traced per size (each run draws 2 to this many, in secret)."""

GLUE = frozenset(f"aten::{op}" for op in (
    # views and shape
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t",
    "squeeze", "unsqueeze", "flatten", "slice", "select", "narrow", "split", "split_with_sizes",
    "chunk", "unbind", "alias", "detach", "lift_fresh",
    # memory: allocation, layout, copies and dtype conversions (precision is judged by correctness)
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "zero_", "fill_", "contiguous", "clone", "copy_", "_to_copy", "to", "resize_",
    "_local_scalar_dense",
))
"""The aten ops a ModelNew may run outside its extension: they move or shape data, none computes."""


def traced_cheat(workload: Workload, backend: Backend, build: BuildResult,
                 limits: Limits) -> tuple[str, str] | None:
    """(verdict, reason) when the forward's ops do the reference's work, or the tracing run
    fails; None when only glue ran outside the extension."""
    try:
        ops = _candidate_ops(workload, backend, build, limits)
    except CandidateFailed as exc:
        return exc.outcome, f"tracing the forward's ops: {exc.reason}"
    if ops is None:
        return "rejected_cheat", ("tracing the forward's ops: the runner did not report exactly one "
                                  "trace under the run's token (the recorder was disabled, or its "
                                  "report suppressed or repeated)")
    outside = sorted(set(ops["forward"]) - GLUE)
    if outside:
        return "rejected_cheat", (f"op trace: the forward runs torch's compute ops outside the custom "
                                  f"extension: {', '.join(outside)} (only data movement may: "
                                  f"docs/gate.md, 'ModelNew kernels')")
    borrowed = sorted(set(ops["extension"]) & (_reference_ops(workload) - GLUE))
    if borrowed:
        return "rejected_cheat", (f"op trace: the custom extension calls the reference's own ops: "
                                  f"{', '.join(borrowed)}")
    return None


def _candidate_ops(workload: Workload, backend: Backend, build: BuildResult,
                   limits: Limits) -> dict[str, list[str]] | None:
    """The ops the host printed, from a runner that loads the kernel (and runs its forward at
    every size) with the recorder on, and is then closed without a call."""
    device = backend.open_device(1)
    inputs, outputs = device.arena(1, "trace-inputs"), device.arena(1, "trace-outputs")
    token = secrets.token_hex(16)  # a line the kernel printed cannot pass for ours
    calls = 2 + secrets.randbelow(TRACED_CALLS - 1)  # a forward cannot count its way past the trace
    env = {**backend.sandbox_env(1, workload), TRACE_ENV: f"{token}:{calls}"}
    memory = limits.memory_bytes if backend.address_space_limit_ok() else None
    candidate = None
    try:
        candidate = Candidate(backend.sandbox_runner(), (build.artifact, build.artifact_sha256),
                              "kl_launch", inputs, outputs, 1, memory, limits.stall_s, env,
                              backend.sandbox_files(workload))
        log = candidate.log_tail(limit=1 << 20)
    finally:
        if candidate is not None:
            candidate.close()
        inputs.close()
        outputs.close()
    lines = [ln for ln in log.splitlines() if ln.startswith(f"KL_TRACE {token} ")]
    return json.loads(lines[0].removeprefix(f"KL_TRACE {token} ")) if len(lines) == 1 else None


def _reference_ops(workload: Workload) -> set[str]:
    """The aten ops the reference runs at its smallest size (our process: trusted code)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Recorder(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):  # no dynamo import for a recorder
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func._schema.name)
            return func(*args, **(kwargs or {}))

    axes = min(workload.shapes(), key=lambda a: sum(math.prod(s.dims(a)) for s in workload.inputs))
    inputs = {spec.name: generate_array(spec, spec.dims(axes), 0, index)
              for index, spec in enumerate(workload.inputs)}
    with Recorder():
        run_reference(workload, load_reference(workload), inputs, axes)
    return seen
