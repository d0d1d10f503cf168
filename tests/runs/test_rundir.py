from __future__ import annotations

import json

import pytest

from klineage.errors import ConfigError
from klineage.runs import RunDir, RunInterrupted, RunStarted


def test_events_append_and_survive_a_torn_line(tmp_path):
    run = RunDir.create(tmp_path, "mine", "axpy", {"workload": "w"})
    run.log(RunInterrupted(reason="first"))
    run.log(RunInterrupted(reason="second"))
    with open(run.path / "events.jsonl", "a") as handle:  # a write cut short by SIGKILL
        handle.write('{"t": "x", "event": "step_acc')
    again = RunDir.open(run.path)
    assert again.event_kinds() == ["run_started", "run_interrupted", "run_interrupted"]
    assert [e.reason for e in again.events(RunInterrupted)] == ["first", "second"]
    assert again.events(RunStarted)[0].kind == "mine"
    assert again.meta["workload"] == "w"


def test_write_json_is_atomic(tmp_path):
    run = RunDir.create(tmp_path, "mine", "axpy", {})
    run.write_json("lineage.json", {"a": 1})
    assert json.loads((run.path / "lineage.json").read_text()) == {"a": 1}
    assert not list(run.path.glob(".*.tmp"))


def test_open_refuses_other_folders(tmp_path):
    with pytest.raises(ConfigError, match="not a run directory"):
        RunDir.open(tmp_path)
