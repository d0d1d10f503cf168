"""The spool executor and ``klineage worker``: gate jobs written to a folder as data, drained
where the device is, results taken back only for jobs this side wrote. Workers here are threads
of this process (``serve``) and, once, the real command in its own process."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from klineage.backends import get_backend
from klineage.errors import GateWaiting, KlineageError
from klineage.executors import executor_from
from klineage.executors.spool import SpoolExecutor, _hash, _requeue_stale, job_record, serve
from klineage.gate import GateOptions, GateReport
from klineage.gate.session import GateTask, run_task
from klineage.workload import load_kernel, load_workload

NULL = GateOptions(backend="null", trials=3, target_trial_s=0.05, warmup_s=0.02, max_sets=3,
                   compare_s=0.5, min_pairs=12)


def _task(variant: str = "plain", against: str | None = None) -> GateTask:
    axpy = load_workload(FIXTURES / "axpy")
    return GateTask(axpy, load_kernel(axpy, variant), get_backend("null"), NULL,
                    against=load_kernel(axpy, against) if against else None,
                    compare_only=against is not None)


class _Worker:
    """``serve`` on a thread until the test is done."""

    def __init__(self, folder: Path):
        self.stop = threading.Event()
        self.ran = []
        self.thread = threading.Thread(target=lambda: self.ran.append(
            serve(folder, poll_s=0.05, stop=self.stop)), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=60)


def test_a_gate_and_a_comparison_through_the_spool_are_the_local_ones(tmp_path):
    spool = tmp_path / "spool"
    tasks = [_task("plain"), _task("expert", against="plain")]
    with _Worker(spool):
        results = dict(SpoolExecutor(spool, poll_s=0.05).map(run_task, tasks))
    assert isinstance(results[0], GateReport) and results[0].verdict == run_task(tasks[0]).verdict
    assert results[1].decision == run_task(tasks[1]).decision == "faster"
    # the job is the kernel's bytes, not a path on the submitting machine
    record = json.loads(next((spool / "done").glob("*.json")).read_text())
    assert set(record) == {"job", "mode", "result"}
    assert not list((spool / "pending").iterdir()) and not list((spool / "claimed").iterdir())


def test_a_job_carries_the_exact_bytes_it_gates(tmp_path):
    record = job_record(_task("plain"))
    files = {name: base64.b64decode(data) for name, data in record["kernel"]["files"].items()}
    kernel = load_kernel(load_workload(FIXTURES / "axpy"), "plain")
    assert files[kernel.source.name] == kernel.source.read_bytes()
    assert record["job"] == _hash(record) and "kernels/plain/kernel.c" not in record["workload"]["files"]


def test_a_run_finds_its_own_results_and_another_run_measures_anew():
    from dataclasses import replace

    task = _task("plain")
    mine, again = replace(task, origin="run-a/k"), replace(task, origin="run-a/k")
    other = replace(task, origin="run-b/k")  # a bench's next repeat: the same kernel, timed anew
    assert job_record(mine)["job"] == job_record(again)["job"] != job_record(other)["job"]


def test_two_workers_run_each_job_once(tmp_path):
    spool = tmp_path / "spool"
    executor = SpoolExecutor(spool)
    for variant in ("plain", "expert", "slow"):
        record = job_record(_task(variant))
        (spool / "pending" / f"{record['job']}.json").write_text(json.dumps(record))
    counts = []
    workers = [threading.Thread(target=lambda: counts.append(serve(spool, once=True, poll_s=0.01)))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert sum(counts) == 3 and len(list((spool / "done").glob("*.json"))) == 3
    assert executor.folder == spool


def test_a_claim_its_worker_stopped_touching_goes_back_to_pending(tmp_path):
    spool = tmp_path / "spool"
    SpoolExecutor(spool)
    claimed = spool / "claimed" / "abc123.deadhost-1.json"
    claimed.write_text("{}")
    _requeue_stale(spool, stale_s=600)
    assert claimed.exists()  # fresh: its worker may be running it
    old = time.time() - 3600
    os.utime(claimed, (old, old))
    _requeue_stale(spool, stale_s=600)
    assert (spool / "pending" / "abc123.json").exists() and not claimed.exists()


def test_a_result_for_another_job_is_refused(tmp_path):
    spool = tmp_path / "spool"
    executor = SpoolExecutor(spool, poll_s=0.01)
    task = _task("plain")
    name = job_record(task)["job"]
    (spool / "done").mkdir(parents=True, exist_ok=True)
    (spool / "done" / f"{name}.json").write_text(json.dumps({"job": "someone-else", "result": {}}))
    with pytest.raises(KlineageError, match="not the result of job"):
        dict(executor.map(run_task, [task]))


def test_a_job_whose_files_leave_its_folder_is_refused_not_run(tmp_path):
    spool = tmp_path / "spool"
    executor = SpoolExecutor(spool, poll_s=0.01)
    record = job_record(_task("plain"))
    record["kernel"]["files"]["../../escaped.txt"] = base64.b64encode(b"x").decode()
    record["job"] = _hash(record)
    (spool / "pending" / f"{record['job']}.json").write_text(json.dumps(record))
    assert serve(spool, once=True) == 1
    done = json.loads((spool / "done" / f"{record['job']}.json").read_text())
    assert "leaves its folder" in done["error"]
    assert not list(tmp_path.rglob("escaped.txt"))
    # and a job whose content was changed after it was hashed is refused too
    record["options"]["trials"] = 1
    (spool / "pending" / f"{record['job']}x.json").write_text(json.dumps(record))
    serve(spool, once=True)
    changed = json.loads((spool / "done" / f"{record['job']}x.json").read_text())
    assert "does not match its hash" in changed["error"]
    assert executor.remote("cuda") and executor.slots("cuda") == 1


def test_only_gate_jobs_go_through_the_spool_and_other_jobs_run_here(tmp_path):
    # a bench's expert timing or group of optimize runs needs the brain where the run is: it runs
    # in this process, and its own gate jobs come back to the spool
    assert dict(SpoolExecutor(tmp_path).map(len, ["ab", "c"])) == {0: 2, 1: 1}
    assert not any((tmp_path / "pending").iterdir())
    assert executor_from(f"spool:{tmp_path}").name == "spool"


def test_without_waiting_every_job_is_written_then_the_command_stops(tmp_path):
    spool = tmp_path / "spool"
    tasks = [_task("plain"), _task("expert")]
    with pytest.raises(GateWaiting, match=r"2 gate job\(s\) wait in .*klineage worker") as waiting:
        dict(SpoolExecutor(spool, wait=False).map(run_task, tasks))
    assert waiting.value.jobs == 2 and waiting.value.flags == f"--executor spool:{spool} --no-wait"
    assert len(list((spool / "pending").glob("*.json"))) == 2
    serve(spool, once=True)
    results = dict(SpoolExecutor(spool, wait=False).map(run_task, tasks))
    assert [results[i].verdict for i in (0, 1)] == [run_task(t).verdict for t in tasks]
    with pytest.raises(KlineageError, match="--no-wait is for --executor spool"):
        executor_from("local", wait=False)


def test_the_worker_command_drains_a_spool_and_says_what_it_gated(tmp_path):
    spool = tmp_path / "spool"
    SpoolExecutor(spool)
    record = job_record(_task("plain"))
    (spool / "pending" / f"{record['job']}.json").write_text(json.dumps(record))
    proc = subprocess.run([sys.executable, "-c", "from klineage.cli import main; main()", "worker",
                           str(spool), "--once", "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0]) == {"job": record["job"], "outcome": "accepted"}


def test_klineage_gate_through_a_spool_folder_with_a_worker_elsewhere(tmp_path):
    # The run where the model is; the worker (a thread here) where the device is; only the
    # folder between them.
    spool = tmp_path / "spool"
    with _Worker(spool):
        proc = subprocess.run([sys.executable, "-c", "from klineage.cli import main; main()", "gate",
                               str(FIXTURES / "axpy"), "plain", "--backend", "null", "--executor",
                               f"spool:{spool}", "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["verdict"] == "accepted" and len(list((spool / "done").glob("*.json"))) == 1
