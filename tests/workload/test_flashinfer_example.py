"""The README's "Run klineage on FlashInfer-Bench" commands, run as written: the example dataset
imports, its C solution is accepted by the gate on the CPU, and the trace written back parses."""

from __future__ import annotations

import re
import shlex

import pytest
from typer.testing import CliRunner

from conftest import REPO
from klineage.cli import app
from klineage.workload.flashinfer._format import Trace

pytest.importorskip("torch")


def _section_commands() -> list[tuple[list[str], str | None]]:
    """(arguments after `klineage`, the file stdout is redirected to, if any)."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Run klineage on FlashInfer-Bench", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        if line.startswith("$ klineage "):
            command, _, redirect = line[2:].partition(" > ")
            commands.append((shlex.split(command)[1:], redirect.strip() or None))
    return commands


def test_the_flashinfer_example_imports_gates_and_traces(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    commands = _section_commands()
    assert [c[:2] for c, _ in commands] == [["import", "flashinfer-bench"],
                                            ["gate", "workloads/flashinfer/silu_mul_d128"],
                                            ["export", "flashinfer-trace"]]
    runner = CliRunner(env={"COLUMNS": "200"})
    for arguments, redirect in commands:
        result = runner.invoke(app, arguments)
        assert result.exit_code == 0, result.output
        if redirect:
            (tmp_path / redirect).write_text(result.output)
    records = (tmp_path / "traces" / "silu_mul_d128.jsonl").read_text().splitlines()
    assert len(records) == 1
    trace = Trace.model_validate_json(records[0])
    assert (trace.definition, trace.solution, trace.evaluation.status.value) == (
        "silu_mul_d128", "silu_mul_c", "PASSED")
