"""``klineage report`` as a user meets it: a real subprocess, --json, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from report._helpers import assert_png


def _klineage(*args: str, tmp_path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KLINEAGE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "klineage.cli", "report", *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_report_json_names_the_files(runs, tmp_path):
    out = tmp_path / "site"
    proc = _klineage(str(runs / "bench_run"), "--out", str(out), "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    paths = json.loads(proc.stdout)
    assert paths["html"] == str(out / "index.html") and paths["markdown"] == str(out / "report.md")
    assert paths["plots"] == [str(out / "bench-curves.png")]
    assert_png(out / "bench-curves.png")
    assert "cpu-small" in (out / "index.html").read_text()


def test_report_prints_where_it_wrote(runs, tmp_path):
    proc = _klineage(str(runs / "optimize_run"), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(runs / "optimize_run" / "report" / "index.html") in proc.stdout


def test_bad_run_is_one_red_line_exit_2(runs, tmp_path):
    (runs / "optimize_run" / "run.json").write_text(json.dumps({"kind": "nonsense"}))
    cases = {runs / "optimize_run": "unknown run kind 'nonsense'",
             tmp_path / "missing": "no such run directory"}
    for target, message in cases.items():
        proc = _klineage(str(target), tmp_path=tmp_path)
        assert proc.returncode == 2, proc.stdout
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr + proc.stdout
