"""``--resume`` continues a run only the way it was started, and a run stopped by Ctrl-C says
where it is. Through the CLI, on the null backend (no compiler, seconds per run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from klineage.cli import app
from klineage.runs import BudgetChanged, RunDir

AXPY, DOT = str(FIXTURES / "axpy"), str(FIXTURES / "dot")
NULL = ["--backend", "null"]


def _cli(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [*args], catch_exceptions=False)


def _only_run(root: Path) -> Path:
    (path,) = (p for p in root.iterdir() if p.is_dir())
    return path


def _snapshot(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished mine run (into a library) and a finished optimize run (budget 2 gate runs, no
    library)."""
    root = tmp_path_factory.mktemp("runs")
    mined = _cli("mine", AXPY, "--admit-on", "", "--max-steps", "2", "--runs", str(root / "mine"),
                 "--library", str(root / "lib"), *NULL)
    assert mined.exit_code == 0, mined.output
    optimized = _cli("optimize", DOT, "--method", "none", "--budget", "gate_runs=2", "--sol-target", "100",
                     "--runs", str(root / "optimize"), *NULL)
    assert optimized.exit_code == 0, optimized.output
    return {"mine": _only_run(root / "mine"), "optimize": _only_run(root / "optimize"),
            "lib": root / "lib"}


@pytest.mark.parametrize(("command", "resumed", "args", "says"), [
    ("optimize", "mine", [DOT], "is a mine run, not an optimize run"),
    ("mine", "optimize", [AXPY], "is an optimize run, not a mine run"),
    ("optimize", "optimize", [AXPY], "this run is on workload dot"),
    ("optimize", "optimize", [DOT, "--quick"], "declares no [quick_axes]"),
    ("optimize", "optimize", [DOT, "--brain", "openai"], "started with --brain rules, not openai"),
    ("optimize", "optimize", [DOT, "--library", "LIB"], "started with --library None"),
    ("mine", "mine", [AXPY, "--brain", "anthropic"], "started with --brain rules, not anthropic"),
])
def test_a_resume_that_does_not_match_the_run_is_refused_and_writes_nothing(
        runs, command, resumed, args, says):
    # Before: optimize --resume <mine run> and mine --resume <optimize run> were tracebacks, and
    # optimize --resume given another workload gated the old kernel against the wrong reference.
    before = _snapshot(runs[resumed])
    args = [str(runs["lib"]) if a == "LIB" else a for a in args]
    result = _cli(command, *args, "--resume", str(runs[resumed]), *NULL)
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert _snapshot(runs[resumed]) == before


def test_a_run_started_with_quick_sizes_resumes_only_with_them(tmp_path):
    transpose = str(FIXTURES.parents[1] / "examples" / "workloads" / "cpu" / "transpose")
    first = _cli("optimize", transpose, "--method", "none", "--budget", "gate_runs=1", "--quick",
                 "--runs", str(tmp_path), *NULL)
    assert first.exit_code == 0, first.output
    result = _cli("optimize", transpose, "--resume", str(_only_run(tmp_path)), *NULL)
    assert result.exit_code == 2 and "started with --quick; resume it the same way" in result.output


def test_a_library_given_on_resume_must_be_the_runs_own(runs, tmp_path):
    mined = _cli("mine", AXPY, "--admit-on", "", "--max-steps", "1", "--library", str(tmp_path / "lib"),
                 "--runs", str(tmp_path / "runs"), *NULL)
    assert mined.exit_code == 0, mined.output
    run = _only_run(tmp_path / "runs")
    result = _cli("mine", AXPY, "--library", str(tmp_path / "other"), "--resume", str(run), *NULL)
    assert result.exit_code == 2 and "started with --library" in result.output


def test_a_finished_mine_is_never_measured_again_or_overwritten(runs):
    # It was: mine --resume on a finished run re-measured it and overwrote summary.json,
    # lineage.json and findings.json (10.63x became 1.47x, with two mine_finished events).
    before = _snapshot(runs["mine"])
    result = _cli("mine", AXPY, "--resume", str(runs["mine"]), *NULL)
    assert result.exit_code == 2, result.output
    assert "this mine run is finished" in result.output and "start a new run" in result.output
    assert _snapshot(runs["mine"]) == before


def test_a_new_budget_on_resume_is_recorded_and_used(tmp_path):
    root = tmp_path / "runs"
    first = _cli("optimize", DOT, "--method", "none", "--budget", "gate_runs=2", "--sol-target", "100",
                 "--runs", str(root), "--json", *NULL)
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["spent"]["gate_runs"] == 2
    run = _only_run(root)
    # Resumed without --budget: the run's own budget holds (it is spent), nothing more is gated.
    same = _cli("optimize", DOT, "--resume", str(run), "--json", *NULL)
    assert json.loads(same.output)["spent"]["gate_runs"] == 2
    # A larger budget given on resume continues the run (the README says so; it used to be ignored).
    more = _cli("optimize", DOT, "--resume", str(run), "--budget", "gate_runs=4", "--json", *NULL)
    assert more.exit_code == 0, more.output
    assert json.loads(more.output)["spent"]["gate_runs"] > 2
    folder = RunDir.open(run)
    assert [(e.old, e.new) for e in folder.events(BudgetChanged)] == [("gate_runs=2", "gate_runs=4")]
    assert folder.meta["budget"]["gate_runs"] == 4


def test_a_start_that_fails_leaves_no_run_folder(tmp_path):
    # --record with the rules brain is refused; the run folder used to be made before the brain.
    result = _cli("optimize", DOT, "--method", "none", "--record", str(tmp_path / "c.jsonl"),
                  "--runs", str(tmp_path / "runs"), *NULL)
    assert result.exit_code == 2 and "need an LLM brain" in result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_ctrl_c_says_where_the_run_is_and_how_to_resume_it(tmp_path):
    # A mine: its walk, re-derivations and lift take many gate runs, so the run is still going
    # when the signal comes (an optimize on the null backend can end before it).
    root = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "klineage.cli", "mine", AXPY, "--expert", "expert", "--library",
         str(tmp_path / "library"), "--runs", str(root), *NULL],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "COLUMNS": "300", "KLINEAGE_CACHE_DIR": str(tmp_path / "cache")})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:  # stopped once it is gating
        logs = list(root.glob("*/events.jsonl"))
        if logs and '"charge"' in logs[0].read_text():
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    run = _only_run(root)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"klineage mine {AXPY} --resume {run}" in " ".join(err.split())
    assert RunDir.open(run).event_kinds()[-1] == "run_interrupted"
