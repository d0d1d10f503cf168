"""The README's `$ klineage` examples, run in order as a user would, on the null backend.

Each gate, mine and optimize line runs with `--backend null --quick` (no compiler: a modeled
time per feature; docs/gate.md), so the chain mine → skills → report → optimize runs in the
suite. What changes or is left out is listed here, with the reason, so that a README example no
test runs is a visible decision: see ``ADJUSTED`` and ``NOT_RUN``.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from typer.testing import CliRunner

from conftest import REPO
from klineage.cli import app

NOT_RUN = {
    "--brain agent": "needs an agent CLI; the agent brain is tested in tests/editors",
    "--brain openai": "needs a model; tests/editors runs it against a loopback server",
    "--brain replay": "needs a cassette recorded from a model; tests/editors records and replays",
    "klineage bench": "4 methods x 5 workloads (x 3 repeats): minutes even on the null backend; "
                      "tests/bench and benchmarks/bench_suite.py run it",
    "--method memory": "the same path as the klineage optimize line; tests/optimize runs memory",
    "klineage memory build": "a forward run as long as the mine's: tests/optimize/test_memory.py "
                             "runs this command on the null backend",
    "workloads/kernelbench": "tests/workload/test_kernelbench_example.py runs the KernelBench section "
                             "as written on the CPU backend (import, gate, mine, optimize)",
    "workloads/flashinfer": "tests/workload/test_flashinfer_example.py runs the FlashInfer-Bench "
                            "section as written on the CPU backend, redirecting the gate's --json "
                            "to the file the export reads",
    "--method rules-table": "the same path as the klineage optimize line; tests/optimize runs "
                            "rules-table and its table",
    "klineage mine examples/workloads/cpu/rmsnorm --resume": "continues an interrupted mine; the "
        "mine above finished, which a resume refuses (tests/runs/test_resume.py stops one with "
        "Ctrl-C and resumes it, and checks the refusal)",
}
ADJUSTED = {
    # Admission on one held-out workload instead of all four siblings: the same code, a quarter
    # of the time.
    "klineage mine examples/workloads/cpu/rmsnorm --expert": ["--admit-on",
                                                              "examples/workloads/cpu/softmax"],
}
ON_THE_MODEL = ("gate", "mine", "optimize")


def _examples() -> list[str]:
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```console\n(.*?)```", readme, re.S)
    return [line[2:].split("  #")[0].strip() for block in blocks for line in block.splitlines()
            if line.startswith("$ klineage ")]


def _latest(root, kind: str) -> str:
    runs = sorted(p for p in (root / "runs").iterdir() if f"-{kind}-" in p.name)
    return str(runs[-1].relative_to(root))


def test_the_readme_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KLINEAGE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "examples").symlink_to(REPO / "examples")
    runner = CliRunner(env={"COLUMNS": "200"})
    ran = []
    for line in _examples():
        if any(marker in line for marker in NOT_RUN):
            continue
        words = shlex.split(line)[1:]
        verb = words[0]
        if verb in ON_THE_MODEL:
            words += ["--backend", "null", *(["--quick"] if "--quick" not in words else [])]
        for prefix, extra in ADJUSTED.items():
            if line.startswith(prefix):
                words += extra
        words = [_substitute(w, verb, words, tmp_path, runner) for w in words]
        result = runner.invoke(app, words)
        assert result.exit_code in (0, 1) if verb == "gate" else result.exit_code == 0, (
            f"$ klineage {' '.join(words)}\n{result.output}")
        ran.append(verb)
    assert {"gate", "doctor", "features", "mine", "skills", "report", "schemas", "optimize"} <= set(ran)


def _substitute(word: str, verb: str, words: list[str], root, runner: CliRunner) -> str:
    if word == "path/to/my_kernel.c":
        return "examples/workloads/cpu/rmsnorm/kernels/expert/kernel.c"
    if word == "runs/<id>":
        return _latest(root, "optimize" if verb == "optimize" else "mine")
    if word == "<id>":
        listed = runner.invoke(app, ["skills", "list", "--library", "library", "--all", "--json"])
        cards = json.loads(listed.output)
        if not cards:
            pytest.fail("the README's mine example lifted no card to show")
        return cards[0]["id"]
    return word
