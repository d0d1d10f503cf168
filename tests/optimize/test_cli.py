"""``klineage optimize`` from the command line: --explain, --json, user errors, and a run killed
mid-loop (SIGKILL) that ``--resume`` finishes without redoing a candidate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from typer.testing import CliRunner

from conftest import FIXTURES
from klineage.cli import app


def test_explain_prints_chosen_and_skipped(library, tmp_path):
    from optimize.cards import card

    library.add(card("omp_parallel", admitted=False))
    result = CliRunner().invoke(app, ["optimize", str(FIXTURES / "dot"), "--library", str(library.root),
                                      "--sol-target", "0.000001", "--runs", str(tmp_path / "runs"),
                                      "--explain"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "retrieval on the start kernel" in result.output and "skip" in result.output
    assert "not admitted" in result.output and "#1: bottleneck" in result.output
    shown = " ".join(result.output.split())  # the caption wraps at the table's width
    assert "speed of light" in shown and "best kernel" in shown


def test_explain_comes_before_the_first_candidate(library, tmp_path):
    """--explain printed why cards were picked only after the whole run."""
    from klineage.optimize import OptimizeOptions, optimize
    from klineage.runs import Budget
    from klineage.workload import load_kernel, load_workload

    dot = load_workload(FIXTURES / "dot")
    runs, seen = tmp_path / "runs", []

    def explain(method: str, rows: list) -> None:
        [events] = runs.glob("*/events.jsonl")
        seen.append((method, len(rows), events.read_text().count('"candidate_gated"')))

    result = optimize(dot, load_kernel(dot, "naive"), library,
                      OptimizeOptions(sol_target=100, budget=Budget.parse("gate_runs=3")),
                      runs_root=runs, explain=explain)
    assert seen == [("klineage", 3, 0)]
    assert result.record["steps"], "the run gated no candidate: nothing came after the explanation"


def test_json_and_user_errors(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["optimize", str(FIXTURES / "dot"), "--runs", str(tmp_path)])
    assert missing.exit_code == 2 and "needs --library" in missing.output
    wrong = runner.invoke(app, ["optimize", str(FIXTURES / "dot"), "--method", "magic"])
    assert wrong.exit_code == 2 and "unknown method 'magic'" in wrong.output
    budget = runner.invoke(app, ["optimize", str(FIXTURES / "dot"), "--method", "none",
                                 "--budget", "gates=x"])
    assert budget.exit_code == 2 and "--budget" in budget.output
    result = runner.invoke(app, ["optimize", str(FIXTURES / "dot"), "--method", "none", "--json",
                                 "--sol-target", "0.000001", "--runs", str(tmp_path / "runs")])
    record = json.loads(result.output)
    assert record["method"] == "none" and record["steps"] == [] and record["retrieval"] == []


def _command(*args):
    return [sys.executable, "-m", "klineage.cli", "optimize", str(FIXTURES / "dot"), "--json",
            "--sol-target", "100", *args]


def test_sigkill_mid_loop_then_resume(library, tmp_path):
    env = {**os.environ, "KLINEAGE_CACHE_DIR": str(tmp_path / "cache")}
    runs = tmp_path / "runs"
    common = ["--library", str(library.root), "--runs", str(runs), "--budget", "gate_runs=6"]
    process = subprocess.Popen(_command(*common), env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline, log = time.monotonic() + 240, None
    while time.monotonic() < deadline and process.poll() is None:
        logs = list(runs.glob("*/events.jsonl"))
        if logs and '"event": "candidate"' in logs[0].read_text():
            log = logs[0]
            break
        time.sleep(0.1)
    assert log is not None, "the loop never logged a candidate"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = [json.loads(line)["key"] for line in log.read_text().splitlines()
              if line.endswith("}") and '"event": "candidate"' in line]
    done = subprocess.run(_command(*common, "--resume", str(log.parent)), env=env, capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    keys = [json.loads(line)["key"] for line in log.read_text().splitlines()
            if '"event": "candidate"' in line]
    assert keys[: len(before)] == before and len(keys) == len(set(keys)), "a candidate was redone"
    assert len(record["steps"]) == len(keys) and record["status"] == "ok"
    assert record["stop_reason"].startswith(("no candidate left to the best kernel",
                                             "budget reached: gate runs 6 of 6"))
