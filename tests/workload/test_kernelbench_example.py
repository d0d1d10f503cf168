"""The README's "Run klineage on KernelBench" commands, run as written with the CPU backend: the
example problem imports, its naive C kernel is accepted by the whole gate, and the imported
workload mines and optimizes like any other."""

from __future__ import annotations

import re
import shlex

import pytest
from typer.testing import CliRunner

from conftest import REPO
from klineage.cli import app

pytest.importorskip("torch")


def _section_commands() -> list[list[str]]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Run klineage on KernelBench", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, re.S).group(1)
    return [shlex.split(line[2:])[1:] for line in block.splitlines() if line.startswith("$ klineage ")]


def test_the_kernelbench_example_imports_and_its_kernel_passes_the_gate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    commands = _section_commands()
    assert [c[:2] for c in commands] == [["import", "kernelbench"],
                                         ["gate", "workloads/kernelbench/1_linear_relu"],
                                         ["mine", "workloads/kernelbench/1_linear_relu"],
                                         ["optimize", "workloads/kernelbench/1_linear_relu"]]
    runner = CliRunner(env={"COLUMNS": "200"})
    imported = runner.invoke(app, commands[0])
    assert imported.exit_code == 0, imported.output
    assert "imported 1 of 1 problems" in imported.output
    gated = runner.invoke(app, commands[1])
    assert gated.exit_code == 0, gated.output
    assert "verdict: accepted" in gated.output
    # what the walk and the loop find is timing, which a unit test does not judge: that they run
    mined = runner.invoke(app, commands[2])
    assert mined.exit_code == 0, mined.output
    assert "steps accepted / rejected" in mined.output and (tmp_path / "library").is_dir()
    optimized = runner.invoke(app, commands[3])
    assert optimized.exit_code == 0, optimized.output
    assert "best kernel" in " ".join(optimized.output.split())  # the caption wraps at the table's width
