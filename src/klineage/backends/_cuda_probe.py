"""Measures a CUDA device's ceilings; run as a subprocess by CudaBackend.ceilings."""

from __future__ import annotations

import json
import statistics

import torch


def _median_ms(fn, warmup: int = 3, reps: int = 15) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    n = 1 << 30  # 1 GiB each way: far past the L2
    src = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = min(_median_ms(lambda: dst.copy_(src)) for _ in range(2))
    size = 8192
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    mm_ms = _median_ms(lambda: torch.matmul(a, b), reps=10)
    print(json.dumps({
        "copy_gbps": 2 * n / (copy_ms / 1e3) / 1e9,
        "bf16_gflops": 2 * size**3 / (mm_ms / 1e3) / 1e9,
        "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size,
        "details": {"copy": "torch copy_ of 1 GiB (read + write)",
                    "compute": "torch.matmul bf16 8192^3 on random data",
                    "torch": torch.__version__},
    }))


if __name__ == "__main__":
    main()
