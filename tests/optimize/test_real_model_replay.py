"""Real-model data replayed offline: the first answer of a general-purpose frontier LLM (through
the relay, ``benchmarks/bench_llm.py``) on a held-out workload, gated again here.

The cassette's key leaves out the gate's feedback and the machine, so it replays on any machine;
the first request of a ``none`` run depends on nothing else (no cards, no memory)."""

from __future__ import annotations

import json

from conftest import REPO
from klineage.optimize import MethodInputs, OptimizeOptions, optimize
from klineage.runs import Budget
from klineage.workload import load_kernel, load_workload

DATA = REPO / "benchmarks" / "results" / "llm-2026-12-01"
CELL = DATA / "cells" / "none-layernorm_ptr-r0"


def _recorded_first_step() -> dict:
    bench = json.loads((CELL / "bench.json").read_text())
    run = bench["results"][0]["optimize_run"].split("/cells/", 1)[1].split("/", 1)[1]
    return json.loads((CELL / run / "optimize.json").read_text())["steps"][0]


def test_the_models_first_answer_replays_and_gets_the_recorded_verdict(tmp_path, quick):
    workload = load_workload(REPO / "examples" / "heldout" / "cpu" / "layernorm_ptr")
    options = OptimizeOptions(budget=Budget.parse("calls=1"), brain="replay", method="none",
                              replay=CELL / "cassette.jsonl", gate=quick, sol_target=100.0)
    result = optimize(workload, load_kernel(workload, "naive"), None, options,
                      runs_root=tmp_path / "runs", inputs=MethodInputs())
    step, recorded = result.record["steps"][0], _recorded_first_step()
    assert step["candidate"] == recorded["candidate"], "the same kernel, from the cassette"
    correct = ("accepted", "slower")
    assert (step["verdict"] in correct) == (recorded["verdict"] in correct), step["reason"]
    if recorded["kept"] and recorded["ratio"] < 0.5:  # a large gain is no matter of noise
        assert step["kept"], step["reason"]
