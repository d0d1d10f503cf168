"""Executors: where gate work runs (DESIGN.md §10). ``local`` compiles in parallel on this
machine's cores; timed runs stay exclusive per device through the gate's device lock."""

from klineage.executors.base import Executor
from klineage.executors.local import LocalExecutor

__all__ = ["Executor", "LocalExecutor"]
