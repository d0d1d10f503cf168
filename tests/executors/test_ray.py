"""The Ray executor on a local two-CPU cluster: gate jobs and a bench through it, with one timing
actor killed mid-run, give the local executor's verdicts; nothing is lost or charged twice.

The gate jobs run the real CPU gate (correctness: its verdicts do not depend on the load). The
bench times kernels, and Ray's own daemons load a 2-core machine past what the gate accepts as a
measurement (it says unmeasurable, rightly): the bench runs on the null backend's exact model."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage.bench import bench
from klineage.bench.run import BenchRowDone
from klineage.errors import ConfigError
from klineage.executors import LocalExecutor, using
from klineage.gate import GateSession
from klineage.optimize import OptimizeOptions
from klineage.runs import Budget, Charge, Meter, RunDir
from klineage.workload import KernelState, load_kernel

ray = pytest.importorskip("ray")
from klineage.executors.ray import RayExecutor  # noqa: E402

pytestmark = pytest.mark.timeout(240)


class KillingExecutor(RayExecutor):
    """Kills the actor it gives its ``kill_at``-th job half a second after handing it over, so
    (most likely) while the job runs."""

    def __init__(self, kill_at: int):
        super().__init__()
        self.kill_at, self.dispatched = kill_at, 0

    def _dispatch(self, slot, job, item):
        ref = super()._dispatch(slot, job, item)
        self.dispatched += 1
        if self.dispatched == self.kill_at:
            time.sleep(0.5)
            ray.kill(slot.actor)
        return ref


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # Workers build into the same per-session cache as this process (conftest's _isolated_cache).
    cache = tmp_path_factory.getbasetemp() / "cache"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"KLINEAGE_CACHE_DIR": str(cache)}})
    yield
    ray.shutdown()


@pytest.fixture
def suite(tmp_path):
    root = tmp_path / "suite"
    for name in ("dot", "scale"):
        shutil.copytree(FIXTURES / name, root / name)
    return root


def _verdicts(record):
    return {(r["workload"], r["method"], r["repeat"]):
            (r["status"], r["reason"], r["best_state"], r["correct_candidates"],
             r["failed_candidates"]) for r in record["results"]}


def test_a_bench_through_ray_with_an_actor_killed_gives_the_local_verdicts(cluster, suite, tmp_path,
                                                                          null_gate):
    options = OptimizeOptions(budget=Budget.parse("gate_runs=2"), gate=null_gate)

    def run(executor, where):
        with using(executor):
            return bench(suite, None, ["none"], options, repeats=2, runs_root=tmp_path / where,
                         seed=3)

    local = run(LocalExecutor(), "local")
    killing = KillingExecutor(kill_at=3)  # 2 expert timings, then the first group
    remote = run(killing, "ray")

    assert _verdicts(remote.record) == _verdicts(local.record)
    assert len(_verdicts(remote.record)) == 4 and killing.dispatched == 2 + 4 + 1
    assert len(remote.run.events(BenchRowDone)) == 4, "each group's rows logged once, by the parent"
    for row in remote.record["results"]:
        if row["optimize_run"]:
            charges = RunDir(Path(row["optimize_run"])).events(Charge)
            assert [c.total["gate_runs"] for c in charges if c.kind == "gate"] == [1, 2]


def test_gate_jobs_through_ray_are_charged_once_each(cluster, axpy, tmp_path, quick):
    plain = KernelState.from_spec(load_kernel(axpy, "plain"))
    states = [plain, KernelState.from_spec(load_kernel(axpy, "expert")),
              plain.with_source(plain.source.replace("+ z[i]", "- z[i]")),
              plain.with_source(plain.source + "\n#error broken\n")]

    def verdicts(executor, where):
        run = RunDir(tmp_path / where)
        meter = Meter(log=run.log)
        with using(executor):
            session = GateSession(run, axpy, quick, meter=meter)
            session.prebuild(states)  # on Ray: build tasks
            found = {s.fingerprint: r.verdict.value for s, r in session.check_many(states, False)}
        return found, meter.spent.gate_runs, len(run.events(Charge))

    local, *local_charged = verdicts(LocalExecutor(), "local")
    killing = KillingExecutor(kill_at=2)
    remote, *remote_charged = verdicts(killing, "ray")
    assert killing.dispatched == len(states) + 1, "the killed actor's job ran again"
    assert remote == local and sorted(local.values()) == ["accepted", "accepted", "compile_error",
                                                          "incorrect"]
    assert local_charged == remote_charged == [len(states), len(states)]


def test_the_gate_command_through_ray_prints_the_local_verdicts(cluster):
    from typer.testing import CliRunner

    from klineage.cli import app

    def verdicts(executor):
        result = CliRunner().invoke(app, ["gate", str(FIXTURES / "axpy"), "--no-profile", "--json",
                                          "--executor", executor])
        assert result.exit_code == 0, result.output
        return [(r["kernel"], r["verdict"]) for r in json.loads(result.output)]

    assert verdicts("ray") == verdicts("local") == [("expert", "accepted"), ("plain", "accepted"),
                                                    ("slow", "accepted")]


def test_an_executor_that_cannot_run_is_one_error_line(monkeypatch):
    from typer.testing import CliRunner

    from klineage.cli import app

    def error(executor):
        result = CliRunner().invoke(app, ["gate", str(FIXTURES / "axpy"), "--executor", executor])
        assert isinstance(result.exception, ConfigError)  # klineage's entry: one red line, status 2
        return str(result.exception)

    assert "no Ray cluster answers there" in error("ray:127.0.0.1:1")
    assert "expected local, ray, ray:ADDRESS or spool:DIR" in error("dask")
    assert "needs the spool folder" in error("spool")
    monkeypatch.setitem(sys.modules, "klineage.executors.ray", None)  # as if ray were not installed
    assert "pip install 'klineage[ray]'" in error("ray")


def test_optimize_through_ray_takes_the_local_steps_and_resumes_with_either(cluster, tmp_path):
    """Its gate runs and comparisons are jobs on the timing actor; the run folder is the same,
    so a run started on Ray is finished by the local executor."""
    from typer.testing import CliRunner

    from klineage.cli import app

    def optimize(executor, *more):
        args = ["optimize", str(FIXTURES / "dot"), "--method", "rules-table", "--backend", "null",
                "--json", "--executor", executor, *more]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    def steps(record):
        return [(s["verdict"], s["kept"]) for s in record["steps"]]

    local = optimize("local", "--budget", "gate_runs=3", "--runs", str(tmp_path / "local"))
    remote = optimize("ray", "--budget", "gate_runs=2", "--runs", str(tmp_path / "ray"))
    (run,) = (tmp_path / "ray").iterdir()
    resumed = optimize("local", "--budget", "gate_runs=3", "--resume", str(run))
    assert steps(resumed) == steps(local) and len(steps(local)) == 2
    assert steps(remote) == steps(local)[:1]


def test_mine_through_ray_walks_and_admits_as_local(cluster, tmp_path):
    from typer.testing import CliRunner

    from klineage.cli import app

    def mine(executor):
        result = CliRunner().invoke(app, [
            "mine", str(FIXTURES / "axpy"), "--backend", "null", "--json", "--executor", executor,
            "--library", str(tmp_path / executor / "lib"), "--runs", str(tmp_path / executor)])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output)
        return [summary[k] for k in ("features_removed", "cards_lifted", "cards_admitted")] + [
            summary["spent"]["gate_runs"]]

    assert mine("ray") == mine("local")
