"""Run directories (an append-only, fsynced event log every decision can be derived from) and
the budget meter whose every charge goes into that log.

The meter lives here, not in ``optimize/``, because ``mine`` and ``bench`` charge it too and the
gate wrapper in ``lineage/`` must import it without importing the forward loop.
"""

from klineage.runs.budget import Budget, Charge, Meter, Spent, Usage
from klineage.runs.events import Event, RunInterrupted, RunStarted
from klineage.runs.run import BudgetChanged, Run, RunMeta, check_resume, resume_command
from klineage.runs.rundir import RunDir, new_run_id

__all__ = ["Budget", "BudgetChanged", "Charge", "Event", "Meter", "Run", "RunDir", "RunInterrupted",
           "RunMeta", "RunStarted", "Spent", "Usage", "check_resume", "new_run_id", "resume_command"]
