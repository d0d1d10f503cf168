"""Executors: where gate work runs (DESIGN.md §10). ``local`` compiles in parallel on this
machine's cores and runs jobs in this process; ``ray`` spreads both over a Ray cluster;
``spool`` writes jobs to a folder that ``klineage worker`` drains where the device is. Timed
runs stay exclusive per device either way (one timing slot per device, and the gate's device lock).

A command picks its executor once (``--executor local|ray[:ADDRESS]|spool:DIR``) and runs under ``using``;
the gate sessions and stages beneath it ask ``current()``. A job running inside a slot sees the
local executor: its work is already placed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from klineage.errors import ConfigError
from klineage.executors.base import Executor
from klineage.executors.local import LocalExecutor

__all__ = ["Executor", "LocalExecutor", "current", "executor_from", "using"]

_current: ContextVar[Executor | None] = ContextVar("klineage_executor", default=None)


_LOCAL = LocalExecutor()
"""This process's local executor when no command chose one (its GPU workers start once)."""


def current() -> Executor:
    """The executor of the command running now (local unless one was chosen)."""
    return _current.get() or _LOCAL


@contextmanager
def using(executor: Executor) -> Iterator[Executor]:
    token = _current.set(executor)
    try:
        yield executor
    finally:
        _current.reset(token)


def executor_from(text: str, waiting: Callable[[str], None] | None = None,
                  wait: bool = True) -> Executor:
    """``local``, ``ray`` (RAY_ADDRESS, or a new local cluster), ``ray:ADDRESS`` (HOST:PORT of a
    running cluster's head, or a ``ray://`` client address) or ``spool:DIR`` (a folder a
    ``klineage worker`` drains where the device is; ``waiting`` hears how many jobs wait, and
    ``wait=False`` stops the command instead, ``GateWaiting``)."""
    kind, _, address = text.partition(":")
    if not wait and kind != "spool":
        raise ConfigError("--no-wait is for --executor spool:DIR (other executors run every job "
                          "before they answer)")
    if kind == "local" and not address:
        return LocalExecutor()
    if kind == "spool":
        if not address:
            raise ConfigError("--executor spool:DIR needs the spool folder")
        from klineage.executors.spool import SpoolExecutor

        return SpoolExecutor(Path(address).expanduser(), waiting=waiting, wait=wait)
    if kind != "ray":
        raise ConfigError(f"--executor: expected local, ray, ray:ADDRESS or spool:DIR, got {text!r}")
    try:
        from klineage.executors.ray import RayExecutor
    except ImportError as exc:
        raise ConfigError("--executor ray needs ray: pip install 'klineage[ray]'") from exc
    return RayExecutor(address or None)
