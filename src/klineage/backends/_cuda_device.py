"""The trusted side's GPU memory and randomness for the CUDA backends (``CudaDevice``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from klineage.backends._arenas import CudaArena, word_bytes
from klineage.workload.dtypes import dtype_info
from klineage.workload.inputs import parse_init, shaping
from klineage.workload.model import TensorSpec

__all__ = ["CudaDevice"]

_FLUSH_FACTOR = 2  # flush writes twice the L2 size

class CudaDevice:
    """The trusted side's GPU memory: torch tensors, and the device arenas the runner shares by
    IPC handle (the runner can write them, so inputs are compared with a copy after each call).
    The L2 is flushed from here: it is one per GPU, whichever context writes it."""

    torch_device = "cuda"
    inputs_protected = False
    async_streams = True
    helper_threads = 2
    """The driver's threads: one honest layernorm call on the H200 used 2.0 ms of CPU in 0.5 ms
    (1 call in about 5,000; 2026-12-01), more than the spinning main thread alone can."""

    def arena(self, nbytes: int, name: str) -> CudaArena:
        return CudaArena(nbytes, name, self._torch)

    def _upload(self, values: np.ndarray) -> Any:
        if values.dtype.name == "bfloat16":
            tensor = self._torch.from_numpy(values.view(np.int16)).view(self._torch.bfloat16)
        else:
            tensor = self._torch.from_numpy(np.ascontiguousarray(values))
        return tensor.to("cuda")

    def put(self, view: Any, values: Any) -> None:
        view.copy_(self._upload(values) if isinstance(values, np.ndarray) else values)

    def clone(self, view: Any) -> Any:
        return view.clone()

    def copy_into(self, sink: Any, view: Any) -> None:
        sink.copy_(view)

    def __init__(self) -> None:
        import torch

        self._torch = torch
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self._flush = torch.empty(_FLUSH_FACTOR * l2 // 4, dtype=torch.int32, device="cuda")
        self._starts: dict[tuple[int, int], Any] = {}

    def _torch_dtype(self, dtype: np.dtype) -> Any:
        t = self._torch
        return {"bfloat16": t.bfloat16, "float16": t.float16, "float32": t.float32,
                "float64": t.float64, "int8": t.int8, "int32": t.int32, "int64": t.int64,
                "uint8": t.uint8, "bool": t.bool}[np.dtype(dtype).name]

    def random(self, spec: TensorSpec, dims: tuple[int, ...], seed: int, index: int) -> Any:
        """Drawn on the device by torch's generator: host generation of GiB-sized inputs
        dominated GPU gate time. Same (seed, index, dims): same values, on this device."""
        generator = self._torch.Generator(device="cuda")
        generator.manual_seed((seed * 1_000_003 + index) % (1 << 63))
        buffer = self._generate(spec, dims, generator)
        if buffer.numel() and not bool(buffer.any()):  # never hand out all zeros
            buffer.view(-1)[0] = 1
        self._torch.cuda.synchronize()
        return buffer

    def generator(self, rng: np.random.Generator) -> Any:
        generator = self._torch.Generator(device="cuda")
        generator.manual_seed(int(rng.integers(0, 1 << 62)))
        return generator

    def draw(self, spec: TensorSpec, dims: tuple[int, ...], generator: Any) -> Any:
        return self._generate(spec, dims, generator)

    def _generate(self, spec: TensorSpec, dims: tuple[int, ...], generator: Any) -> Any:
        torch = self._torch
        kind, args = parse_init(spec.init, spec.dtype)
        shape = tuple(dims)
        if kind == "normal":
            values = torch.randn(shape, generator=generator, device="cuda")
            values = values * args[1] + args[0] if args else values
        elif kind == "uniform":
            values = torch.rand(shape, generator=generator, device="cuda") * (args[1] - args[0]) + args[0]
        elif kind == "randint":
            values = torch.randint(int(args[0]), int(args[1]), shape, generator=generator, device="cuda")
        else:
            values = torch.rand(shape, generator=generator, device="cuda") < 0.5
        how = shaping(spec.init)
        if how and shape:  # as inputs.draw_values shapes them on the host
            if how == "sorted":
                values = torch.sort(values, dim=-1).values
            elif how == "constant_rows":
                values = values[..., :1].expand(shape)
            else:
                pool = values.reshape(-1)[:8]
                values = pool[torch.randint(0, pool.numel(), shape, generator=generator, device="cuda")]
        return values.to(self._torch_dtype(dtype_info(spec.dtype).numpy)).contiguous()

    def download(self, buffer: Any) -> np.ndarray:
        self._torch.cuda.synchronize()
        if buffer.dtype == self._torch.bfloat16:
            import ml_dtypes

            return buffer.view(self._torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
        return buffer.cpu().numpy()

    def pick_blocks(self, count: int, share: int, generator: Any) -> Any:
        # On the device: an upload from host memory would wait for all the work queued before it.
        torch = self._torch
        windows = max(1, count // share)
        width = count // windows
        starts = self._starts.get((windows, width))
        if starts is None:
            starts = self._starts[(windows, width)] = torch.arange(0, windows * width, width,
                                                                   device="cuda")
        return starts + torch.randint(0, width, (windows,), generator=generator, device="cuda")

    def words_differ(self, a: Any, b: Any) -> Any:
        word = {8: self._torch.int64, 4: self._torch.int32, 2: self._torch.int16,
                1: self._torch.uint8}[word_bytes(a.numel() * a.element_size())]
        return self._torch.count_nonzero(a.reshape(-1).view(word) != b.reshape(-1).view(word))

    def bytes_not(self, buffer: Any, byte: int) -> Any:
        return self._torch.count_nonzero(buffer.reshape(-1).view(self._torch.uint8) != byte)

    def counts(self, pending: list[Any]) -> list[int]:
        return self._torch.stack(pending).tolist() if pending else []

    def reference_input(self, buffer: Any, framework: str) -> Any:
        return buffer.clone() if framework == "torch" else self.download(buffer)

    def native(self, value: Any, dtype: str) -> Any:
        torch = self._torch
        if isinstance(value, np.ndarray):
            if value.dtype.name == "bfloat16":
                value = value.astype(np.float32)
            value = torch.from_numpy(np.ascontiguousarray(value))
        tensor = value.to("cuda")
        if dtype == "bool":
            # Raw bytes: a bool view would turn the 0xAB poison into a plausible True.
            return tensor.view(torch.uint8) if tensor.dtype == torch.bool else tensor.to(torch.uint8)
        return tensor.double() if dtype_info(dtype).is_float else tensor

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self._torch.empty(tuple(shape), dtype=self._torch_dtype(dtype), device="cuda")

    def fill(self, buffer: Any, value: float | int, bytewise: bool = False) -> None:
        # No synchronize: the session synchronizes once before each call it hands the runner.
        (buffer.view(self._torch.uint8) if bytewise else buffer).fill_(value)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()

    def flush_cache(self) -> None:
        self._flush.fill_(0x5A)
