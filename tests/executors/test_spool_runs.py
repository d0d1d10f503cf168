"""A run split by a spool, end to end: the run where the brain is, stopped with ``--no-wait``
at each gate job and resumed; a worker in its own process and folder, killed once mid-job; the
job re-queued and gated by the next worker; nothing lost or charged twice, and every step the
one a local run takes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage.bench import bench, resume_bench
from klineage.cli._common import run_gate_options
from klineage.errors import ConfigError, GateWaiting
from klineage.executors import using
from klineage.executors.spool import SpoolExecutor, serve
from klineage.gate import GateOptions
from klineage.optimize import OptimizeOptions, optimize
from klineage.runs import Budget, RunDir
from klineage.runs.budget import Charge
from klineage.workload import load_kernel, load_workload

pytestmark = pytest.mark.usefixtures("spool_key")
CLI = [sys.executable, "-c", "from klineage.cli import main; main()"]


def _options() -> OptimizeOptions:
    """What ``klineage optimize --backend null`` runs with: a resume must use the same."""
    return OptimizeOptions(method="rules-table", budget=Budget(gate_runs=3),
                           gate=run_gate_options(None, "null", None))


def _until(condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_run_split_by_a_spool_with_a_worker_killed_mid_job_is_the_local_run(tmp_path):
    axpy = load_workload(FIXTURES / "axpy")
    local = optimize(axpy, load_kernel(axpy, "plain"), None, _options(),
                     runs_root=tmp_path / "local")
    spool, gpu_node = tmp_path / "spool", tmp_path / "gpu-node"
    gpu_node.mkdir()
    # the first stop, from the command line: exit status 3, what waits and how to go on
    started = subprocess.run([*CLI, "optimize", str(FIXTURES / "axpy"), "--start", "plain",
                              "--method", "rules-table", "--budget", "gate_runs=3", "--backend", "null",
                              "--runs", str(tmp_path / "split"), "--executor", f"spool:{spool}",
                              "--no-wait", "--json"], capture_output=True, text=True, timeout=300)
    assert started.returncode == 3, started.stderr
    status = json.loads(started.stdout)
    assert status["status"] == "waiting" and status["jobs"] == 1
    assert f"klineage worker {spool} --once" in status["message"]
    run = Path(re.search(r"--resume (\S+)", status["message"]).group(1))
    assert f"--resume {run} --backend null --executor spool:{spool} --no-wait" in status["message"]
    with pytest.raises(ConfigError, match="started with other gate options"):  # not another gate
        optimize(axpy, None, None, replace(_options(), gate=GateOptions(backend="null")), resume=run)
    # a worker in its own process and folder takes the job and is killed while it gates it
    worker = subprocess.Popen([*CLI, "worker", str(spool)], cwd=gpu_node, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _until(lambda: any((spool / "claimed").iterdir()))
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    assert not any((spool / "done").iterdir()), "the job finished before the kill"
    time.sleep(1.2)  # the claim goes stale: the next worker puts it back and gates it
    drained = subprocess.run([*CLI, "worker", str(spool), "--once", "--stale", "1", "--json"],
                             cwd=gpu_node, capture_output=True, text=True, timeout=300)
    assert drained.returncode == 0 and len(drained.stdout.splitlines()) == 1, drained.stderr
    stops = 1
    while True:
        with using(SpoolExecutor(spool, wait=False)):
            try:
                split = optimize(axpy, None, None, _options(), resume=run)
                break
            except GateWaiting:
                stops += 1
        assert serve(spool, once=True) >= 1
    # one round for the start kernel, one per candidate (its gate and its comparison with the
    # best, placed together), one for the final comparison: 6 jobs in 4 rounds
    assert stops == 4
    assert ([(s["verdict"], s["kept"], s["candidate"]) for s in split.record["steps"]]
            == [(s["verdict"], s["kept"], s["candidate"]) for s in local.record["steps"]])
    assert split.record["best_state"] == local.record["best_state"]
    charged = [c.what for c in RunDir.open(run).events(Charge) if c.kind == "gate"]
    assert len(charged) == len(set(charged)) == split.record["spent"]["gate_runs"] \
        == local.record["spent"]["gate_runs"]
    assert not any((spool / "pending").iterdir()) and not any((spool / "claimed").iterdir())
    assert len(list((spool / "done").glob("*.json"))) == 6


def test_a_bench_through_a_spool_in_rounds_is_the_local_bench(null_gate, tmp_path):
    # Each round goes as far as every group can; a resume keeps the methods' finished runs and
    # resumes the stopped one; the judging side by side waits for the spool like the rest.
    options = OptimizeOptions(budget=Budget(gate_runs=2), gate=null_gate)
    local = bench(FIXTURES / "dot", None, ["none", "rules-table"], options,
                  runs_root=tmp_path / "local", seed=3)
    spool, path, rounds = tmp_path / "spool", None, 0
    while True:
        with using(SpoolExecutor(spool, wait=False)):
            try:
                split = (resume_bench(path, options=options) if path else
                         bench(FIXTURES / "dot", None, ["none", "rules-table"], options,
                               runs_root=tmp_path / "split", seed=3))
                break
            except GateWaiting as exc:
                path = Path(re.search(r"--resume (\S+)", str(exc)).group(1))
                rounds += 1
        assert serve(spool, once=True) >= 1
    assert rounds >= 3

    def rows(result):
        return [(r["method"], r["status"], r["best_state"], round(r["speedup_vs_start"], 6), r["reason"])
                for r in result.record["results"]]

    assert rows(split) == rows(local)
    assert len(list((path / "runs").iterdir())) == 2, "one optimize run per method, resumed, not redone"
