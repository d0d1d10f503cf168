"""Shared memory between the trusted side and a sandboxed runner: one arena per role.

The trusted side owns each arena and reads and writes it with the array library of its
device; the runner gets a handle it can map and nothing else. Host arenas are memfds: the input
arena reaches the runner as a read-only descriptor, so no candidate can write an input. CUDA
arenas are device allocations shared by IPC handle; a GPU mapping cannot be made read-only, so
the trusted side checks the inputs against its own copy after every call instead.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import warnings
from typing import Any

import numpy as np

__all__ = ["PAGE", "CudaArena", "HostArena", "round_up", "word_bytes"]

PAGE = mmap.PAGESIZE


def round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def word_bytes(nbytes: int) -> int:
    """The widest word (8, 4, 2 or 1 bytes) a buffer of ``nbytes`` splits into: comparing words,
    not bytes, makes the temporaries of a comparison up to 8 times smaller."""
    return next(w for w in (8, 4, 2, 1) if nbytes % w == 0)


class _Bump:
    """Aligned offsets handed out front to back; reset for each new layout."""

    nbytes: int

    def reset(self) -> None:
        self._next = 0

    def take(self, nbytes: int, align: int = 64) -> int:
        offset = round_up(getattr(self, "_next", 0), align)
        if offset + nbytes > self.nbytes:
            raise RuntimeError(f"internal: shared arena too small ({offset + nbytes} > {self.nbytes})")
        self._next = offset + nbytes
        return offset


class HostArena(_Bump):
    """A memfd mapped here (numpy views) and passed to the runner as a descriptor."""

    def __init__(self, nbytes: int, name: str):
        self.nbytes = max(PAGE, round_up(nbytes, PAGE))
        self.fd = os.memfd_create(f"klineage-{name}", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.nbytes)
        self._map = mmap.mmap(self.fd, self.nbytes)
        self.base = np.frombuffer(self._map, dtype=np.uint8)
        self.reset()

    def runner_handle(self, read_only: bool) -> tuple[str, list[int]]:
        """(argument for the runner, descriptors to pass it); read-only: a new descriptor of
        the same memory that can only be mapped for reading."""
        fd = os.open(f"/proc/self/fd/{self.fd}", os.O_RDONLY | os.O_CLOEXEC) if read_only else self.fd
        return str(fd), [fd]

    def view(self, offset: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = math.prod(shape)
        return self.base[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)

    def region(self, start: int, end: int) -> np.ndarray:
        return self.base[start:end]

    def close(self) -> None:
        self.base = None  # type: ignore[assignment]
        with contextlib.suppress(BufferError):
            self._map.close()
        os.close(self.fd)


class CudaArena(_Bump):
    """A device allocation of the trusted process, shared with the runner by IPC handle."""

    def __init__(self, nbytes: int, name: str, torch: Any):
        self.nbytes = max(PAGE, round_up(nbytes, PAGE))
        self._torch = torch
        self.base = torch.empty(self.nbytes, dtype=torch.uint8, device="cuda")
        self._sent: list[tuple[bytes, int]] = []
        self.reset()

    def runner_handle(self, read_only: bool) -> tuple[str, list[int]]:
        storage = self.base.untyped_storage()
        # (device, handle, size, offset within the allocation, ref counter handle and offset, ...)
        shared = storage._share_cuda_()
        self._sent.append((shared[4], shared[5]))
        handle, offset = bytes(shared[1]), shared[3]
        # torch prefixes the 64-byte cudaIpcMemHandle with a version byte and a kind, 'c' for
        # cudaMalloc memory (expandable segments, kind 'e', are not shareable this way).
        if len(handle) == 66 and handle[1:2] == b"c":
            handle = handle[2:]
        if len(handle) != 64:
            raise RuntimeError(f"torch gave an IPC handle of {len(handle)} bytes for the arena; "
                               f"klineage shares cudaMalloc memory (unset PYTORCH_CUDA_ALLOC_CONF "
                               f"expandable_segments)")
        return f"{handle.hex()}:{offset}", []

    def view(self, offset: int, shape: tuple[int, ...], dtype: Any) -> Any:
        torch_dtype = _torch_dtype(self._torch, dtype)
        count = math.prod(shape)
        size = torch_dtype.itemsize
        return self.base[offset:offset + count * size].view(torch_dtype).view(tuple(shape))

    def region(self, start: int, end: int) -> Any:
        return self.base[start:end]

    def close(self) -> None:
        """Called once the runners that mapped it are dead. Each share counts one consumer that
        torch waits for before it frees the memory; ours are C runners that never tell it, so
        the counts are released here, or every arena stays allocated for the life of the
        process (a GPU test run ran out of the H200's 139 GiB after about 50 gate jobs)."""
        torch, sent, self._sent = self._torch, self._sent, []
        self.base = None
        try:
            for counter, offset in sent:
                torch.UntypedStorage._release_ipc_counter_cuda(counter, offset)
            torch.cuda.ipc_collect()
        except (AttributeError, RuntimeError, TypeError) as exc:  # a torch without this API
            warnings.warn(f"klineage: the CUDA arena could not be released ({exc}); device memory "
                          f"is held until the process ends", RuntimeWarning, stacklevel=2)


def _torch_dtype(torch: Any, dtype: Any) -> Any:
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
            "float64": torch.float64, "int8": torch.int8, "int32": torch.int32,
            "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool}[np.dtype(dtype).name]
