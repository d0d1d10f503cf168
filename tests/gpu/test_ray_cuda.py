"""A CUDA bench through a local Ray cluster (one timing actor on the GPU) gives the local
executor's verdicts. Skipped without a GPU or ray; run on the device with ``pytest -m gpu``."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from conftest import FIXTURES
from klineage.bench import bench
from klineage.executors import LocalExecutor, using
from klineage.optimize import OptimizeOptions
from klineage.runs import Budget

ray = pytest.importorskip("ray")
from klineage.executors.ray import RayExecutor  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(600)]


def test_a_cuda_bench_through_ray_gives_the_local_verdicts(tmp_path, tmp_path_factory, quick):
    suite = tmp_path / "suite"
    shutil.copytree(FIXTURES / "axpy_cuda", suite / "axpy_cuda")
    gate = replace(quick, target_trial_s=0.02, limits=replace(quick.limits, stall_s=60))
    options = OptimizeOptions(budget=Budget.parse("gate_runs=2"), gate=gate)

    def verdicts(executor, where):
        with using(executor):
            record = bench(suite, None, ["none"], options, repeats=2, runs_root=tmp_path / where,
                           start="plain", expert="vectorized", seed=3).record
        return {(r["workload"], r["repeat"]): (r["status"], r["correct_candidates"],
                                              r["failed_candidates"]) for r in record["results"]}

    local = verdicts(LocalExecutor(), "local")
    cache = tmp_path_factory.getbasetemp() / "cache"
    ray.init(num_cpus=4, num_gpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"KLINEAGE_CACHE_DIR": str(cache)}})
    try:
        executor = RayExecutor()
        assert executor.slots("cuda") == 1
        assert verdicts(executor, "ray") == local and len(local) == 2
    finally:
        ray.shutdown()
