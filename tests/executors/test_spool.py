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
from klineage.executors.spool import (
    MAX_FILE_BYTES,
    SpoolExecutor,
    _hash,
    _requeue_stale,
    _verified,
    job_record,
    serve,
    signed,
)
from klineage.gate import GateOptions, GateReport
from klineage.gate.session import GateTask, run_task
from klineage.workload import load_kernel, load_workload

pytestmark = pytest.mark.usefixtures("spool_key")
NULL = GateOptions(backend="null", trials=3, target_trial_s=0.05, warmup_s=0.02, max_sets=3,
                   compare_s=0.5, min_pairs=12)


def _put(spool: Path, record: dict, key: bytes, name: str | None = None) -> Path:
    """A job as a run writes it: signed."""
    path = spool / "pending" / f"{name or record['job']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(signed(key, b"job", json.dumps(record).encode()))
    return path


def _outcome(spool: Path, name: str, key: bytes) -> dict:
    body = _verified(key, b"result\0" + name.encode(), (spool / "done" / f"{name}.json").read_bytes())
    assert body is not None, "the worker's result is signed for this job"
    return json.loads(body)


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


def test_a_gate_and_a_comparison_through_the_spool_are_the_local_ones(tmp_path, spool_key):
    spool = tmp_path / "spool"
    tasks = [_task("plain"), _task("expert", against="plain")]
    with _Worker(spool):
        results = dict(SpoolExecutor(spool, poll_s=0.05).map(run_task, tasks))
    assert isinstance(results[0], GateReport) and results[0].verdict == run_task(tasks[0]).verdict
    assert results[1].decision == run_task(tasks[1]).decision == "faster"
    # the job is the kernel's bytes, not a path on the submitting machine
    done = next((spool / "done").glob("*.json"))
    assert set(_outcome(spool, done.stem, spool_key)) == {"job", "mode", "result"}
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


def test_two_workers_run_each_job_once(tmp_path, spool_key):
    spool = tmp_path / "spool"
    executor = SpoolExecutor(spool)
    for variant in ("plain", "expert", "slow"):
        _put(spool, job_record(_task(variant)), spool_key)
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


def test_a_result_not_signed_for_this_job_is_refused(tmp_path, spool_key):
    # Anyone who can write done/ could otherwise put an "accepted" there for a wrong kernel.
    spool = tmp_path / "spool"
    executor = SpoolExecutor(spool, poll_s=0.01)
    task = _task("plain")
    name = job_record(task)["job"]
    accepted = json.dumps({"job": name, "mode": "gate", "result": run_task(task).model_dump(mode="json")})
    done = spool / "done" / f"{name}.json"
    for forged in (accepted.encode(),                                     # unsigned
                   signed(b"another-key-of-16-chars", b"result\0" + name.encode(), accepted.encode()),
                   signed(spool_key, b"result\0" + b"0" * 32, accepted.encode()),  # another job's
                   signed(spool_key, b"job", accepted.encode())):       # a job, not a result
        done.write_bytes(forged)
        with pytest.raises(KlineageError, match="not signed with this run's KLINEAGE_SPOOL_KEY"):
            dict(executor.map(run_task, [task]))
    done.write_bytes(signed(spool_key, b"result\0" + name.encode(), json.dumps({"job": "x"}).encode()))
    with pytest.raises(KlineageError, match="not the result of job"):
        dict(executor.map(run_task, [task]))


def test_a_job_whose_files_leave_its_folder_is_refused_not_run(tmp_path, spool_key):
    spool = tmp_path / "spool"
    executor = SpoolExecutor(spool, poll_s=0.01)
    record = job_record(_task("plain"))
    record["kernel"]["files"]["../../escaped.txt"] = base64.b64encode(b"x").decode()
    record["job"] = _hash(record)
    _put(spool, record, spool_key)
    assert serve(spool, once=True) == 1
    assert "leaves its folder" in _outcome(spool, record["job"], spool_key)["error"]
    assert not list(tmp_path.rglob("escaped.txt"))
    # and a job whose content was changed after it was hashed is refused too
    record["options"]["trials"] = 1
    _put(tmp_path / "other", record, spool_key)
    serve(tmp_path / "other", once=True)
    assert "does not match its hash" in _outcome(tmp_path / "other", record["job"], spool_key)["error"]
    assert executor.remote("cuda") and executor.slots("cuda") == 1


def test_a_job_no_key_holder_signed_is_set_aside_not_run(tmp_path, spool_key):
    # Its workload's reference.py would run in the worker: only a key holder's job is a job.
    spool = tmp_path / "spool"
    record = job_record(_task("plain"))
    (spool / "pending").mkdir(parents=True)
    (spool / "pending" / f"{record['job']}.json").write_text(json.dumps(record))
    big = "f" * 32
    (spool / "pending" / f"{big}.json").write_bytes(signed(spool_key, b"job", b" " * (MAX_FILE_BYTES + 1)))
    assert serve(spool, once=True) == 0
    assert not any((spool / "done").iterdir()) and not any((spool / "pending").iterdir())
    assert {p.name.split(".")[0] for p in (spool / "rejected").glob("*.txt")} == {record["job"], big}


def test_a_signed_job_that_breaks_the_parser_is_an_error_result_and_the_worker_goes_on(tmp_path, spool_key):
    spool = tmp_path / "spool"
    deep, good = "a" * 32, job_record(_task("plain"))
    (spool / "pending").mkdir(parents=True)
    (spool / "pending" / f"{deep}.json").write_bytes(signed(spool_key, b"job", b"[" * 200_000))
    _put(spool, {**good, "options": []}, spool_key, name="b" * 32)
    _put(spool, good, spool_key)
    assert serve(spool, once=True) == 3
    assert "RecursionError" in _outcome(spool, deep, spool_key)["error"]
    assert _outcome(spool, "b" * 32, spool_key)["error"]
    assert _outcome(spool, good["job"], spool_key)["result"]["verdict"] == "accepted"


def test_what_is_not_a_job_in_pending_is_left_alone(tmp_path, spool_key):
    # A directory, a FIFO or a symlink named like a job, and a file named after another job's
    # hash: no crash, no hang, nothing touched through the link, no result written for them.
    spool = tmp_path / "spool"
    SpoolExecutor(spool)
    victim = "c" * 32
    (spool / "pending" / f"{'d' * 32}.json").mkdir()
    os.mkfifo(spool / "pending" / f"{'e' * 32}.json")
    target = tmp_path / "elsewhere.txt"
    target.write_text("x")
    os.utime(target, (0, 0))
    (spool / "pending" / f"{'f' * 32}.json").symlink_to(target)
    (spool / "pending" / f"{'0' * 32}.json").symlink_to(tmp_path / "created-through-a-link")
    _put(spool, job_record(_task("plain")), spool_key, name=f"{victim}.alias")
    assert serve(spool, once=True) == 0
    assert target.stat().st_mtime == 0 and not (tmp_path / "created-through-a-link").exists()
    assert not any((spool / "done").iterdir())


def test_a_spool_folder_that_is_a_symlink_is_refused(tmp_path, spool_key):
    spool = tmp_path / "spool"
    SpoolExecutor(spool)
    (spool / "done").rmdir()
    (spool / "done").symlink_to(tmp_path)
    with pytest.raises(KlineageError, match="done/ is not a directory"):
        serve(spool, once=True)


def test_without_a_shared_key_there_is_no_spool(tmp_path, monkeypatch):
    monkeypatch.delenv("KLINEAGE_SPOOL_KEY", raising=False)
    for start in (lambda: SpoolExecutor(tmp_path), lambda: serve(tmp_path, once=True)):
        with pytest.raises(KlineageError, match="needs KLINEAGE_SPOOL_KEY"):
            start()


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


def test_the_worker_command_drains_a_spool_and_says_what_it_gated(tmp_path, spool_key):
    spool = tmp_path / "spool"
    SpoolExecutor(spool)
    record = job_record(_task("plain"))
    _put(spool, record, spool_key)
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


def test_a_result_that_is_no_verdict_stops_the_run_and_is_queued_again(tmp_path, spool_key):
    # the worker's own failure, or a busy worker's unmeasurable time: never a method's verdict
    from klineage.errors import WorkerError
    from klineage.gate import Verdict

    spool = tmp_path / "spool"
    executor = SpoolExecutor(spool, poll_s=0.01, wait=False)
    task = _task("plain")
    name = job_record(task)["job"]
    done = spool / "done" / f"{name}.json"

    def answer(outcome: dict) -> None:
        done.write_bytes(signed(spool_key, b"result\0" + name.encode(), json.dumps(outcome).encode()))

    answer({"job": name, "error": "BackendUnavailableError: no GPU here"})
    with pytest.raises(WorkerError, match=r"could not run job .*no GPU here.*queues the job again"):
        dict(executor.map(run_task, [task]))
    assert not done.exists()
    busy = run_task(task).model_copy(update={"verdict": Verdict.UNMEASURABLE})
    answer({"job": name, "mode": "gate", "result": busy.model_dump(mode="json")})
    assert dict(executor.map(run_task, [task]))[0].verdict is Verdict.UNMEASURABLE
    with pytest.raises(GateWaiting):  # asked again (patiently): gated again, not read again
        dict(executor.map(run_task, [task]))
    (spool / "rejected" / f"{name}.host-1.txt").write_text("not run")
    (spool / "pending" / f"{name}.json").unlink()
    with pytest.raises(WorkerError, match="KLINEAGE_SPOOL_KEY is not this run's"):
        dict(executor.map(run_task, [task]))
