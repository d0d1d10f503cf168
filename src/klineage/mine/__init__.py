"""The mine stage: backward walk → re-derivation → lift → admission → library (``klineage mine``)."""

from klineage.mine.run import MineMeta, MineOptions, MineResult, default_admission_workloads, mine

__all__ = ["MineMeta", "MineOptions", "MineResult", "default_admission_workloads", "mine"]
