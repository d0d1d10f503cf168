"""The Python half of the ModelNew shim. It runs only inside the sandboxed runner: the shim
(``_modelnew_shim.c``) embeds this text and kernel.py's, and runs ``start`` from its
constructor while the runner loads it (read-only opens allowed), then ``call`` once per
``kl_launch``. klineage never imports this module.

``start`` imports torch, puts a ``load_inline`` in place that returns the extension we built
(it is linked into the shim itself, so no other file is loaded), runs kernel.py, builds one
``ModelNew`` per size the gate will call (seeded as the reference seeds ``Model``, on the
workload's device) and runs each call's whole path a few times, so lazy state, torch's threads
and every GPU kernel the calls launch are loaded before the runner's final filter. The shim's op
recorder is on meanwhile, in every runner alike; with ``KL_MODELNEW_TRACE`` (a token) what it
saw of the forward calls is printed after the token for the trusted side to judge; it stays on
through the gate's calls, and a call that runs an op the loading never ran is refused. Nothing
kernel.py can reach differs between a traced runner and any other: the extension is the module
load_inline would give (its calls are marked in C), and the number of calls per size is drawn
the same way in both.
"""

import contextlib
import importlib.machinery
import importlib.util
import json
import math
import os
import secrets
import sys
import traceback
import types
import warnings

import _kl_shim
import torch

SPEC = json.loads(os.environ["KL_MODELNEW"])
DEVICE = SPEC["device"]  # "cpu", or "cuda": the arenas are device memory and calls get a stream
# "token:calls", secret (gone before kernel.py runs): our report's prefix, forward calls per size
TRACE, _, _CALLS = os.environ.pop("KL_MODELNEW_TRACE", "").partition(":")
# Every runner calls each size's forward as many times as a traced one may, drawn the same way,
# so the calls' order and number cannot tell kernel.py which runner it is in.
CALLS = int(_CALLS) if TRACE else 2 + secrets.randbelow(SPEC["traced_calls"] - 1)
_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
           "float64": torch.float64, "int8": torch.int8, "int32": torch.int32,
           "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool}
_state = {"models": {}, "streams": {}}


def _load_inline(*args, **kwargs):
    """The extension kernel.py's sources were compiled into (its arguments were read and
    checked at build time; these are ignored), as itself: its calls are marked in C."""
    if not _kl_shim.EXTENSION:
        raise RuntimeError("kernel.py calls load_inline, but no extension was built for it")
    loader = importlib.machinery.ExtensionFileLoader(_kl_shim.EXTENSION, _kl_shim.LIBRARY)
    module = importlib.util.module_from_spec(
        importlib.util.spec_from_loader(_kl_shim.EXTENSION, loader))
    loader.exec_module(module)
    _kl_shim.mark(module)
    return module


def _reference():
    # the sandbox's copy, in the runner's folder (its working directory)
    path = os.path.join(os.getcwd(), SPEC["reference"])
    spec = importlib.util.spec_from_file_location("klineage_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "init_inputs"):
        raise RuntimeError(f"{SPEC['reference']} predates ModelNew kernels: import the problem again")
    return module


def _kernel():
    """kernel.py, run with our load_inline in place of torch's (its build machinery never loads)."""
    fake = types.ModuleType("torch.utils.cpp_extension")
    fake.load_inline = _load_inline
    sys.modules["torch.utils.cpp_extension"] = fake
    torch.utils.cpp_extension = fake
    module = types.ModuleType("kernel")
    module.__file__ = "kernel.py"
    sys.modules["kernel"] = module
    exec(compile(_kl_shim.KERNEL_SOURCE, "kernel.py", "exec"), module.__dict__)
    return module


def _forward(model, reference, tensors):
    named = dict(zip([name for name, _ in SPEC["inputs"]], tensors, strict=True))
    args = [named[name] for name in reference.INPUTS]
    weights = {key: named[name] for name, key in reference.WEIGHTS.items()}
    _kl_shim.forward(True)  # for the recorder: ops from here on are the forward's
    try:
        if weights:
            return torch.func.functional_call(model, weights, tuple(args), strict=True)
        return model(*args)
    finally:
        _kl_shim.forward(False)


def _recorded():
    """The recorder's lines as the trace's report: the ops in the extension's calls, and those
    outside them in a forward with the op each ran inside ("" for none)."""
    ops = {"extension": [], "forward": []}
    for line in _kl_shim.recorded().splitlines():
        kind, *names = line.split("\t")
        if kind == "e":
            ops["extension"].append(names[0])
        else:
            ops["forward"].append(names)
    return ops


def _sample(dims, dtype):
    kind = _DTYPES[dtype]
    if kind.is_floating_point:
        return torch.randn(dims, dtype=kind, device=DEVICE)
    return torch.zeros(dims, dtype=kind, device=DEVICE)


def start():
    """Everything before the first call; returns (inputs, outputs, axes, params) counts."""
    warnings.filterwarnings("ignore", message="The given buffer is not writable")
    torch.set_num_threads(SPEC["threads"])
    torch.set_grad_enabled(False)
    _kl_shim.start_recording()  # before kernel.py exists, in every runner
    reference = _state["reference"] = _reference()
    kernel = _kernel()
    if not hasattr(kernel, "ModelNew"):
        raise RuntimeError("kernel.py defines no ModelNew")
    for shape in SPEC["shapes"]:
        init = reference.init_inputs(shape["axes"], SPEC["params"])
        torch.manual_seed(0)  # as the reference builds Model
        model = kernel.ModelNew(*init).to(DEVICE)  # as the reference moves Model
        _state["models"][tuple(shape["axes"].values())] = model, shape
        for _ in range(CALLS):
            given = [_sample(d, t) for d, (_, t) in zip(shape["inputs"], SPEC["inputs"], strict=True)]
            outputs = [torch.empty(d, dtype=_DTYPES[t], device=DEVICE)
                       for d, (_, t) in zip(shape["outputs"], SPEC["outputs"], strict=True)]
            # through the calls' own views: what they load (numpy, behind the CUDA array
            # interface) is loaded while files can still be read
            _run(model, shape, _views([t.data_ptr() for t in given], shape, "inputs", False),
                 _views([t.data_ptr() for t in outputs], shape, "outputs", True))
    if DEVICE == "cuda":
        torch.cuda.synchronize()  # the warm-up is done before the first timed call
    # The recorder stays on through the calls, in every runner: what the forward runs there must
    # be what the traced runner's loading showed (the trace judges only that).
    _state["loaded"] = _kl_shim.recorded_size(), set(_kl_shim.recorded().splitlines())
    if TRACE:
        print(f"KL_TRACE {TRACE} " + json.dumps(_recorded()), flush=True)
    return len(SPEC["inputs"]), len(SPEC["outputs"]), len(SPEC["axis_names"]), len(SPEC["params"])


class _DeviceBytes:
    """Device memory as the CUDA array interface describes it (no stream to wait on). torch
    refuses the interface's read-only flag, so inputs stay writable here: the gate compares
    them with its copy after every call."""

    def __init__(self, pointer, size):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (pointer, False),
                                         "version": 3}


def _wrap(pointer, dims, dtype, writable):
    """An arena's memory as a tensor, without a copy (host memory through a memoryview, read-only
    for inputs, so a write faults and is named)."""
    kind = _DTYPES[dtype]
    size = math.prod(dims) * kind.itemsize
    if size == 0:
        return torch.empty(dims, dtype=kind, device=DEVICE)
    if DEVICE == "cpu":
        memory = torch.frombuffer(_kl_shim.view(pointer, size, writable), dtype=torch.uint8)
    else:
        memory = torch.as_tensor(_DeviceBytes(pointer, size), device=DEVICE)
    return memory.view(kind).view(dims)


def _views(pointers, shape, which, writable):
    """The tensors of one call's inputs or outputs (``which``), over their memory."""
    return [_wrap(p, d, t, writable)
            for p, d, (_, t) in zip(pointers, shape[which], SPEC[which], strict=True)]


def _on_stream(pointer):
    """The runner's timed stream as torch's current stream (CUDA), so the forward, the
    extension (``at::cuda::getCurrentCUDAStream()``) and the copies run on it."""
    if DEVICE == "cpu":
        return contextlib.nullcontext()
    stream = _state["streams"].get(pointer)
    if stream is None:
        stream = _state["streams"][pointer] = torch.cuda.ExternalStream(pointer)
    return torch.cuda.stream(stream)


def _run(model, shape, given, outputs):
    """Forward on the inputs, its results copied into the outputs (same dtype, shape and device:
    no silent conversion)."""
    result = _forward(model, _state["reference"], given)
    results = list(result) if isinstance(result, tuple | list) else [result]
    if len(results) != len(outputs):
        raise ValueError(f"forward returned {len(results)} outputs, the workload has {len(outputs)}")
    for out, dims, (name, dtype), value in zip(outputs, shape["outputs"], SPEC["outputs"], results,
                                               strict=True):
        if not isinstance(value, torch.Tensor) or value.dtype != _DTYPES[dtype] \
                or tuple(value.shape) != tuple(dims) or value.device.type != DEVICE:
            raise ValueError(f"output {name!r} must be a {dtype} tensor of shape {tuple(dims)} on "
                             f"{DEVICE}, got {value!r:.80}")
        out.copy_(value)


def call(inputs, outputs, axes, stream):
    """One kl_launch: the arena's memory as tensors, forward on the runner's stream, the result
    copied into the outputs. 0, or 2 with the reason printed to the log."""
    try:
        model, shape = _state["models"][tuple(axes)]
    except KeyError:
        print(f"ModelNew shim: no model was built for sizes {axes}", file=sys.stderr, flush=True)
        return 2
    try:
        with _on_stream(stream):
            given = _views(inputs, shape, "inputs", False)
            _run(model, shape, given, _views(outputs, shape, "outputs", True))
    except Exception:
        traceback.print_exc()
        sys.stderr.flush()
        return 2
    return _same_ops_as_loading()


def _same_ops_as_loading():
    """0, or the caught code with the ops named when a call ran ops the loading never did."""
    size, seen = _state["loaded"]
    if _kl_shim.recorded_size() == size:
        return 0
    new = sorted({line.split("\t")[-1] for line in set(_kl_shim.recorded().splitlines()) - seen})
    print(f"op trace: the forward ran ops in the gate's calls that it never ran while it was traced "
          f"(a forward that changes after its first calls): {', '.join(new)[:200]}",
          file=sys.stderr, flush=True)
    return SPEC["caught_rc"]
