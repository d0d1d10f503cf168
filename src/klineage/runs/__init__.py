"""Run directories: an append-only, fsynced event log every decision can be derived from."""

from klineage.runs.rundir import RunDir, new_run_id

__all__ = ["RunDir", "new_run_id"]
