"""The null backend's runner: the gate's runner protocol (``gate/_runner.c``), spoken by Python.

It loads no kernel. Each call computes the workload's reference into the outputs, then waits the
artifact's modeled time and reads out that time alone (the gate does not calibrate a modeled
backend: the reading is the model's), so a pipeline (walk, optimize, bench, report) can be
tested end to end without a compiler, in seconds. It is klineage's own code and no sandbox:
the null backend runs only kernels klineage wrote (tests), never a candidate's machine code.

argv: ARTIFACT ENTRY IN_BYTES OUT_BYTES CMD_FD REPLY_FD IN_FD OUT_FD; the workload's folder is
in ``KLINEAGE_NULL_WORKLOAD``. The artifact is JSON: ``{"seconds": s}`` (a kernel) or
``{"spin": true}`` (the calibration kernel, which takes as long as its first parameter says).
"""

from __future__ import annotations

import json
import mmap
import os
import signal
import sys
import time
from pathlib import Path


def main() -> None:
    artifact, _entry, in_bytes, out_bytes, cmd_fd, reply_fd, in_fd, out_fd = sys.argv[1:9]
    model = json.loads(Path(artifact).read_text())
    inputs = mmap.mmap(int(in_fd), int(in_bytes), prot=mmap.PROT_READ)
    outputs = mmap.mmap(int(out_fd), int(out_bytes))
    os.close(int(in_fd))
    os.close(int(out_fd))
    compute = None if model.get("spin") else _reference_call(inputs, outputs)
    replies = os.fdopen(int(reply_fd), "w", buffering=1)

    def answer(text: str) -> None:
        """A reply, then a stop, as gate/_runner.c answers: the gate waits for the stop."""
        replies.write(text)
        os.kill(os.getpid(), signal.SIGSTOP)

    answer("READY 0x0 0x0\n")
    for line in os.fdopen(int(cmd_fd)):
        words = line.split()
        if words[0] == "C":
            started = time.perf_counter_ns()
            counts = [int(w) for w in words[1:5]]
            numbers = words[5:]
            offsets_in, numbers = [int(w) for w in numbers[:counts[0]]], numbers[counts[0]:]
            offsets_out, numbers = [int(w) for w in numbers[:counts[1]]], numbers[counts[1]:]
            axes, params = [int(w) for w in numbers[:counts[2]]], [float.fromhex(w) for w in
                                                                    numbers[counts[2]:]]
            seconds = params[0] if compute is None else model["seconds"]
            if compute is not None:
                compute(offsets_in, offsets_out, axes, params)
            # The reading is the modeled time alone, not what numpy took for the reference, so
            # the model orders kernels exactly; the wait keeps the round trip at least as long.
            deadline = time.perf_counter_ns() + seconds * 1e9
            while time.perf_counter_ns() < deadline:
                pass  # a busy wait: sleeping would be coarser than the calls it models
            reading = time.perf_counter_ns() - started if compute is None else int(seconds * 1e9)
            answer(f"R 0 {reading}\n")
        elif words[0] == "P":
            answer("K\n")  # no guard pages: nothing here is a candidate's
        elif words[0] == "Q":
            return


def _reference_call(inputs: mmap.mmap, outputs: mmap.mmap):
    import numpy as np

    from klineage.workload import load_reference, load_workload, run_reference
    from klineage.workload.dtypes import dtype_info

    workload = load_workload(Path(os.environ["KLINEAGE_NULL_WORKLOAD"]))
    reference = load_reference(workload)
    ins = np.frombuffer(inputs, dtype=np.uint8)
    outs = np.frombuffer(outputs, dtype=np.uint8)

    def view(base, offset: int, spec, axes: dict[str, int]):
        dtype = np.dtype(dtype_info(spec.dtype).numpy)
        dims = spec.dims(axes)
        count = int(np.prod(dims, dtype=np.int64))
        return base[offset:offset + count * dtype.itemsize].view(dtype).reshape(dims)

    def compute(offsets_in, offsets_out, axis_values, params) -> None:
        axes = dict(zip(workload.axes, axis_values, strict=True))
        given = {spec.name: view(ins, off, spec, axes).copy()
                 for spec, off in zip(workload.inputs, offsets_in, strict=True)}
        want = run_reference(workload, reference, given, axes, torch_device="cpu")
        for spec, off in zip(workload.outputs, offsets_out, strict=True):
            target = view(outs, off, spec, axes)
            target[...] = np.asarray(want[spec.name]).astype(target.dtype)

    return compute


if __name__ == "__main__":
    main()
