"""The CLI as a user meets it: real subprocesses, exit codes, one-line errors, --json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES


def klineage(*args: str, env_cache) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "klineage.cli", *args], capture_output=True,
                          text=True, timeout=600, env=env_cache)


def _env(tmp_path):
    import os

    return {**os.environ, "KLINEAGE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "160"}


def test_gate_json_is_a_gate_report(tmp_path):
    proc = klineage("gate", str(FIXTURES / "axpy"), "plain", "--json", "--no-profile",
                    env_cache=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "accepted"
    assert report["workload"] == "axpy" and report["platform"].startswith("cpu-")
    assert {s["name"] for s in report["stages"]} >= {"compile", "static", "correctness"}


def test_gate_table_and_failing_exit_code(tmp_path):
    cheat = FIXTURES.parent / "gate" / "cheats" / "writes_nothing"
    proc = klineage("gate", str(FIXTURES / "axpy"), str(cheat), "--no-profile",
                    env_cache=_env(tmp_path))
    assert proc.returncode == 1
    assert "incorrect" in proc.stdout and "correctness" in proc.stdout


def test_user_errors_are_one_red_line_exit_2(tmp_path):
    proc = klineage("gate", str(tmp_path / "missing"), env_cache=_env(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "workload folder not found" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    proc = klineage("gate", str(FIXTURES / "axpy"), "nope", env_cache=_env(tmp_path))
    assert proc.returncode == 2 and "kernel 'nope' not found" in proc.stderr


def test_doctor_json(tmp_path):
    proc = klineage("doctor", "--json", "--threads", "1", env_cache=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)
    assert facts["cpu backend"].startswith("ok")
    ceilings = facts["cpu ceilings (1 threads)"]
    assert ceilings["copy GB/s"] > 0 and ceilings["fp32 GFLOP/s"] > 0


def test_schemas_writes_one_json_schema_per_record(tmp_path):
    proc = klineage("schemas", str(tmp_path / "schemas"), "--json", env_cache=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    written = [Path(p) for p in json.loads(proc.stdout)]
    names = {p.name for p in written}
    assert {"gate-report.schema.json", "optimize.schema.json", "bench.schema.json",
            "event-candidate.schema.json", "event-charge.schema.json", "event-budget_changed.schema.json",
            "run-mine.schema.json", "run-optimize.schema.json", "run-bench.schema.json",
            "run-demo.schema.json", "memory.schema.json", "findings.schema.json"} <= names
    run = json.loads((tmp_path / "schemas" / "run-optimize.schema.json").read_text())
    assert {"kind", "workload_fingerprint", "sizing", "brain", "library", "budget"} <= set(run["properties"])
    optimize = json.loads((tmp_path / "schemas" / "optimize.schema.json").read_text())
    assert {"steps", "curve", "best_speedup", "stop_reason"} <= set(optimize["properties"])


def test_doctor_prints_brackets_as_text():
    # rich took "[cuda]" in "pip install 'klineage[cuda]'" for markup and printed 'klineage'.
    from rich.console import Console

    from klineage.cli._render import doctor_table

    console = Console(record=True, width=200)
    console.print(doctor_table({"cuda backend": "pip install 'klineage[cuda]'"}))
    assert "pip install 'klineage[cuda]'" in console.export_text()


def test_no_help_text_is_cut_off_at_80_columns_and_flags_show_no_type():
    # rich cuts a word longer than its column with an ellipsis ("gate_runs=8,usd=2,wal…"); typer
    # 0.29 showed "--json <bool>", as if the flag took a value.
    from typer.testing import CliRunner

    from klineage.cli import app

    runner = CliRunner(env={"COLUMNS": "80"})
    for command in (["gate"], ["mine"], ["optimize"], ["bench"], ["demo"], ["report"], ["doctor"],
                    ["features"], ["schemas"], ["skills", "list"], ["skills", "export"],
                    ["memory", "build"], ["list"]):
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0, result.output
        assert "…" not in result.output, f"klineage {' '.join(command)} --help:\n{result.output}"
        assert "<bool>" not in result.output and "--json " in result.output, result.output


def test_a_folder_that_cannot_be_written_is_one_line_exit_2(tmp_path):
    """It was a traceback for schemas, demo and optimize (and skills export): a path under a
    file cannot be made by anyone, root included."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for args in (["schemas", str(blocker / "out")],
                 ["demo", "--backend", "null", "--runs", str(blocker / "runs")],
                 ["optimize", str(FIXTURES / "dot"), "--method", "none", "--backend", "null",
                  "--runs", str(blocker / "runs")]):
        proc = klineage(*args, env_cache=_env(tmp_path))
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
        assert "not a directory" in proc.stderr and str(blocker) in proc.stderr


def test_a_cuda_kernel_on_a_machine_without_a_gpu_says_so_in_one_line(tmp_path):
    """It blamed torch ("no CUDA device is visible to torch") for a machine without a GPU."""
    import shutil

    import pytest

    from klineage import settings

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or not shutil.which(settings.nvcc()):
        pytest.skip("needs nvcc and no visible GPU")
    proc = klineage("gate", str(FIXTURES / "axpy_cuda"), "plain", "--no-profile", env_cache=_env(tmp_path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "this machine has no NVIDIA GPU" in proc.stderr and "torch" not in proc.stderr


def test_every_option_has_help_and_optimize_shows_its_default_budget():
    from typer.testing import CliRunner

    from klineage.cli import app
    from klineage.optimize.loop import DEFAULT_BUDGET

    runner = CliRunner(env={"COLUMNS": "250"})
    for command in (["mine"], ["optimize"], ["demo"]):
        text = runner.invoke(app, [*command, "--help"]).output
        rows = [line for line in text.splitlines() if line.startswith("│ --")]
        bare = [row.split()[1] for row in rows if len(row.split("  ")) and not any(
            c.isalpha() for c in row.split(">")[-1].replace("[default", ""))]
        assert not bare, f"klineage {command[0]}: options without help: {bare}"
    assert f"default: {DEFAULT_BUDGET.describe()}" in runner.invoke(app, ["optimize", "--help"]).output


def test_shell_completion_is_offered(tmp_path):
    proc = klineage("--show-completion", "bash", env_cache=_env(tmp_path))
    assert proc.returncode == 0 and "complete " in proc.stdout and "klineage" in proc.stdout, proc.stderr


def test_list_shows_workloads_and_runs_with_their_state(tmp_path):
    import shutil

    suite = tmp_path / "suite"
    shutil.copytree(FIXTURES / "dot", suite / "dot")
    (suite / "broken").mkdir()
    (suite / "broken" / "workload.toml").write_text("name = [\n")
    runs = tmp_path / "runs"
    stopped = {"event": "run_interrupted", "reason": "interrupted (Ctrl-C)"}
    waiting = {"event": "run_interrupted", "reason": "2 gate job(s) wait", "waiting": 2,
               "flags": "--executor spool:S --no-wait"}
    for name, kind, events in (("a", "optimize", ["run_started", "optimize_finished"]),
                               ("b", "mine", ["run_started", stopped]),
                               ("c", "bench", ["run_started"]),
                               ("d", "optimize", ["run_started", waiting])):
        (runs / name).mkdir(parents=True)
        (runs / name / "run.json").write_text(json.dumps(
            {"kind": kind, "name": "dot", "workload": str(suite / "dot"), "sizing": "quick",
             "created_at": "2026-12-04T10:00:00+00:00"}))
        (runs / name / "events.jsonl").write_text("".join(
            json.dumps(e if isinstance(e, dict) else {"event": e}) + "\n" for e in events))
    proc = klineage("list", str(suite), "--runs", str(runs), "--json", env_cache=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert [(w["name"], w["kernels"], w["error"] is None) for w in found["workloads"]] == [
        ("broken", [], False), ("dot", ["expert", "naive"], True)]
    states = {Path(r["run"]).name: r["state"] for r in found["runs"]}
    assert states["a"] == "finished" and states["c"].startswith("not finished")
    resume = f"klineage mine {suite / 'dot'} --quick --resume {runs / 'b'}"
    assert states["b"] == f"stopped: continue it with {resume}"
    resume = f"klineage optimize {suite / 'dot'} --quick --resume {runs / 'd'}"
    assert states["d"] == (f"waiting for 2 gate job(s): drain the spool, then continue it with "
                           f"{resume} --executor spool:S --no-wait")


def test_a_binary_kernel_file_is_a_compile_error_not_a_traceback(tmp_path):
    """It was a 72-line UnicodeDecodeError (gcc's stderr quotes the bytes it cannot read)."""
    import random

    kernel = tmp_path / "binary"
    kernel.mkdir()
    (kernel / "kernel.c").write_bytes(bytes(random.Random(7).randrange(256) for _ in range(3000)))
    (kernel / "kernel.toml").write_text('language = "c"\n')
    proc = klineage("gate", str(FIXTURES / "axpy"), str(kernel), "--no-profile", "--json",
                    env_cache=_env(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "compile_error"


def test_progress_off_a_terminal_is_plain_lines_at_a_steady_pace():
    """Under nohup or CI the demo printed nothing until its end (rich draws no live display
    where stderr is no terminal)."""
    import io

    from rich.console import Console

    from klineage.cli._common import PlainProgress

    out = io.StringIO()
    progress = PlainProgress(Console(file=out, width=200), every_s=3600)
    progress.stage("mining softmax")
    progress.line("mine softmax: step 1")  # within the pace: not printed
    progress.every_s = 0
    progress.line("mine softmax: step 2")
    lines = out.getvalue().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == ["== mining softmax", "mine softmax: step 2"]
    assert all(line.startswith("[") and " s] " in line for line in lines)
