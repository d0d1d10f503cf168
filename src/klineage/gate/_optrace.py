"""The op trace of a ModelNew kernel: does its forward do the work with torch's own ops?

A fairness rule, not a correctness one: an op-level cheat is still judged correct or not, and
timed, out of its process. The candidate's ops are recorded in a dedicated run of its own
sandboxed runner by the shim's recorder, a callback where every op enters torch's dispatcher,
on while the runner loads in every runner alike (``backends/_modelnew_host.py``); the
reference's are recorded here, in the trusted process, by a dispatch mode. Outside the
extension's calls only ``GLUE`` may run; nowhere the reference's own compute. Before that run,
the extension's objects may not import what the recorder cannot see (ATen's kernels below the
dispatcher) nor define what it calls. What this can and cannot catch is in docs/gate.md
("ModelNew kernels").
"""

from __future__ import annotations

import json
import math
import re
import secrets
from pathlib import Path

from klineage.backends._build_cache import run_tool
from klineage.backends.base import Backend, BuildResult
from klineage.backends.modelnew import (
    BELOW_THE_DISPATCHER,
    TRACE_ENV,
    TRACED_CALLS,
    below_the_dispatcher,
    build_objects,
)
from klineage.errors import ToolchainError
from klineage.gate.sandbox import Candidate, CandidateFailed, Limits
from klineage.workload import load_reference, run_reference
from klineage.workload.inputs import generate_array
from klineage.workload.model import Workload

__all__ = ["GLUE", "TRACED_CALLS", "parsed_report", "runner_log", "trace_blind_spots", "traced_cheat"]

GLUE = frozenset(f"aten::{op}" for op in (
    # views and shape
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t",
    "squeeze", "unsqueeze", "flatten", "slice", "select", "narrow", "split", "split_with_sizes",
    "chunk", "unbind", "alias", "detach", "lift_fresh",
    # memory: allocation, layout, copies and dtype conversions (precision is judged by correctness)
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "zero_", "fill_", "contiguous", "clone", "copy_", "_to_copy", "to", "resize_",
    "_local_scalar_dense", "detach_",
))
"""The aten ops a ModelNew may run outside its extension: they move or shape data, none computes."""


def traced_cheat(workload: Workload, backend: Backend, build: BuildResult,
                 limits: Limits) -> tuple[str, str] | None:
    """(verdict, reason) when the forward's ops do the reference's work, the extension could do
    it out of the trace's sight, or the tracing run fails; None when only glue ran outside the
    extension and nothing of the reference's ran anywhere."""
    blind = trace_blind_spots(build.artifact) if build.artifact else []
    if blind:
        more = f" (and {len(blind) - 1} more)" if len(blind) > 1 else ""
        return "rejected_cheat", f"op trace: the custom extension {blind[0]}{more}"
    try:
        ops = _candidate_ops(workload, backend, build, limits)
    except CandidateFailed as exc:
        return exc.outcome, f"tracing the forward's ops: {exc.reason}"
    if ops is None:
        return "rejected_cheat", ("tracing the forward's ops: the runner did not report exactly one "
                                  "well-formed trace under the run's token (the recorder was "
                                  "disabled, or its report suppressed, repeated or changed)")
    outside = _computed_outside(ops["forward"])
    if outside:
        return "rejected_cheat", (f"op trace: the forward runs torch's compute ops outside the custom "
                                  f"extension: {', '.join(outside)} (only data movement may: "
                                  f"docs/gate.md, 'ModelNew kernels')")
    reference = _reference_ops(workload) - GLUE
    borrowed = sorted({_base(op) for op in ops["extension"]} & reference)
    if borrowed:
        return "rejected_cheat", (f"op trace: the custom extension calls the reference's own ops: "
                                  f"{', '.join(borrowed)}")
    hidden = sorted({_base(op) for _, op in ops["forward"]} & reference)
    if hidden:
        return "rejected_cheat", (f"op trace: the forward runs the reference's own ops inside torch's "
                                  f"data movement: {', '.join(hidden)}")
    return None


def trace_blind_spots(artifact: Path) -> list[str]:
    """Why the recorder could not see what a ModelNew's extension runs (one line each): its
    objects import an ATen kernel below the dispatcher, or define what our objects in the runner
    (the recorder, the shim) call, whose calls the linker would then bind to the candidate's
    definition (or a strong one over a template instance ours holds weakly: ours come first, so
    a weak one stays ours). None for a native kernel."""
    objects = build_objects(artifact)
    if objects is None:
        return []
    candidate, ours = ([_symbol_kinds(obj) for obj in group] for group in objects)
    found = [f"imports {name!r} ({BELOW_THE_DISPATCHER})" for table in candidate
             for name, kind in sorted(table.items()) if kind in "Uvw" and below_the_dispatcher(name)]
    called = {name for table in ours for name, kind in table.items() if kind in "Uvw"}
    weak = {name for table in ours for name, kind in table.items() if kind in "VW"}
    for table in candidate:
        for name, kind in sorted(table.items()):
            if kind not in "Uvw" and (name in called or (name in weak and kind not in "VW")):
                found.append(f"defines {name!r}, which klineage's code in the runner (the op recorder "
                             f"or the shim) calls: the candidate's definition would run in its place")
    return found


def _symbol_kinds(obj: Path) -> dict[str, str]:
    """An object's global symbols and nm's letter for each (U undefined, W weak, T code, ...)."""
    proc = run_tool(["nm", "-C", "--extern-only", str(obj)])
    if proc.returncode != 0:
        raise ToolchainError(f"nm failed on {obj}: {proc.stderr.strip()}")
    # "<value or blanks> <letter> <name>": demangled names hold spaces, so they come last
    lines = (re.match(r"^(?:[0-9a-f]+| +) ([A-Za-z]) (.+)$", line) for line in proc.stdout.splitlines())
    return {m.group(2): m.group(1) for m in lines if m}


def _candidate_ops(workload: Workload, backend: Backend, build: BuildResult,
                   limits: Limits) -> dict[str, list] | None:
    """The ops the host printed, from a runner that loads the kernel (and runs its forward at
    every size) and is then closed without a call; None without exactly one well-formed report."""
    token = secrets.token_hex(16)  # a line the kernel printed cannot pass for ours
    calls = 2 + secrets.randbelow(TRACED_CALLS - 1)  # as every runner draws its own
    log = runner_log(workload, backend, build, limits, {TRACE_ENV: f"{token}:{calls}"})
    return parsed_report(log, token)


def parsed_report(log: str, token: str) -> dict[str, list] | None:
    """The one report under ``token`` in a runner's log, if it is well formed: the candidate's
    process printed it, so any other shape (or a second line) is not ours."""
    lines = [ln for ln in log.splitlines() if ln.startswith(f"KL_TRACE {token} ")]
    if len(lines) != 1:
        return None
    try:
        ops = json.loads(lines[0].removeprefix(f"KL_TRACE {token} "))
    except ValueError:
        return None
    well_formed = (isinstance(ops, dict) and set(ops) == {"extension", "forward"}
                   and isinstance(ops["extension"], list) and isinstance(ops["forward"], list)
                   and all(isinstance(op, str) for op in ops["extension"])
                   and all(isinstance(edge, list) and len(edge) == 2 and all(isinstance(n, str) for n in edge)
                           for edge in ops["forward"]))
    return ops if well_formed else None


def runner_log(workload: Workload, backend: Backend, build: BuildResult, limits: Limits,
               env: dict[str, str]) -> str:
    """What a runner of the kernel printed while it loaded, with ``env`` added to its own (the
    trace's token), closed without a call."""
    device = backend.open_device(1)
    inputs, outputs = device.arena(1, "trace-inputs"), device.arena(1, "trace-outputs")
    memory = limits.memory_bytes if backend.address_space_limit_ok() else None
    candidate = None
    try:
        candidate = Candidate(backend.sandbox_runner(), (build.artifact, build.artifact_sha256),
                              "kl_launch", inputs, outputs, 1, memory, limits.stall_s,
                              {**backend.sandbox_env(1, workload), **env}, backend.sandbox_files(workload))
        return candidate.log_tail(limit=1 << 20)
    finally:
        if candidate is not None:
            candidate.close()
        inputs.close()
        outputs.close()


def _computed_outside(edges: list[list[str]]) -> list[str]:
    """The ops a forward ran outside its extension that compute: each it called itself, unfolded
    through torch's composite ops (which only run other ops; torch's dispatch mode, which records
    the reference, sees what they run) down to glue or an op with a kernel of its own."""
    ran_inside: dict[str, set[str]] = {}
    for caller, op in edges:
        ran_inside.setdefault(caller, set()).add(op)
    found, seen, todo = set(), set(), list(ran_inside.get("", ()))
    while todo:
        op = todo.pop()
        if op in seen or _base(op) in GLUE:
            continue
        seen.add(op)
        if _composite(op):
            todo.extend(ran_inside.get(op, ()))
        else:
            found.add(_base(op))
    return sorted(found)


def _base(op: str) -> str:
    """``aten::to.dtype`` -> ``aten::to``: the recorder names overloads, the trace compares ops."""
    return op.split(".", 1)[0]


def _composite(op: str) -> bool:
    """Whether the op (``aten::name.overload``) is torch's CompositeImplicitAutograd, in this
    (trusted) process; a name torch does not know is not."""
    import torch

    if not re.fullmatch(r"\w+::\w+(?:\.\w+)?", op, flags=re.ASCII):  # the report is the candidate's
        return False
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(op, "CompositeImplicitAutograd"))
    except (RuntimeError, ValueError):
        return False


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
