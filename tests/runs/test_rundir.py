from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from klineage.errors import ConfigError
from klineage.runs import Run, RunDir, RunInterrupted, RunMeta, RunStarted


def test_events_append_and_survive_a_torn_line(tmp_path):
    run = Run.create(tmp_path, RunMeta(kind="test", name="axpy", workload="w"))
    run.log(RunInterrupted(reason="first"))
    run.log(RunInterrupted(reason="second"))
    with open(run.path / "events.jsonl", "a") as handle:  # a write cut short by SIGKILL
        handle.write('{"t": "x", "event": "step_acc')
    again = RunDir.open(run.path)
    assert again.event_kinds() == ["run_started", "run_interrupted", "run_interrupted"]
    assert [e.reason for e in again.events(RunInterrupted)] == ["first", "second"]
    assert again.events(RunStarted)[0].kind == "test"
    assert again.meta["workload"] == "w"


def test_write_json_is_atomic(tmp_path):
    run = Run.create(tmp_path, RunMeta(kind="test", name="axpy"))
    run.write_json("lineage.json", {"a": 1})
    assert json.loads((run.path / "lineage.json").read_text()) == {"a": 1}
    assert not list(run.path.glob(".*.tmp"))


def test_open_refuses_other_folders(tmp_path):
    with pytest.raises(ConfigError, match="not a run directory"):
        RunDir.open(tmp_path)


def test_a_line_torn_by_a_killed_writer_is_cut_before_the_next_event(tmp_path):
    # A real writer killed in the middle of one long event: the next event must not be lost.
    run = Run.create(tmp_path, RunMeta(kind="test", name="axpy"))
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys; from pathlib import Path; from klineage.runs import RunDir, RunInterrupted; "
        "RunDir(Path(sys.argv[1])).log(RunInterrupted(reason='x' * 400_000_000))"), str(run.path)])
    log = run.path / "events.jsonl"
    size = log.stat().st_size
    deadline = time.monotonic() + 60
    while log.stat().st_size < size + (1 << 20) and time.monotonic() < deadline:
        time.sleep(0.005)
    writer.kill()
    writer.wait()
    assert not log.read_bytes().endswith(b"\n"), "the writer finished before it was killed"
    again = RunDir.open(run.path)
    again.log(RunInterrupted(reason="after the kill"))
    assert again.event_kinds() == ["run_started", "run_interrupted"]
    assert again.events(RunInterrupted)[0].reason == "after the kill"
