"""Whole optimize runs driven by each API brain over loopback HTTP (the fake server answers as
a model would, computing its edit with the rules passes from the kernel in the prompt)."""

from __future__ import annotations

import json

import pytest

from editors.conftest import config_for
from editors.fake_llm import FakeLLM
from klineage.optimize import MethodInputs, OptimizeOptions, optimize
from klineage.runs import Budget, Charge


@pytest.mark.parametrize("brain", ["openai", "anthropic"])
@pytest.mark.parametrize("method", ["klineage", "none"])
def test_api_brain_drives_a_whole_optimize(brain, method, dot, dot_naive, library, quick, tmp_path,
                                           monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-loopback")
    server = FakeLLM()
    try:
        options = OptimizeOptions(budget=Budget.parse("gate_runs=4"), brain=brain, method=method,
                                  gate=quick, sol_target=100.0, config=config_for(server.url))
        result = optimize(dot, dot_naive, library, options, runs_root=tmp_path / "runs",
                          inputs=MethodInputs(cards=library.cards()))
    finally:
        server.stop()
    record = json.loads((result.run.path / "optimize.json").read_text())
    assert record["brain"] == brain and record["status"] == "ok"
    task = "# Task: apply" if method == "klineage" else "# Task: make this kernel faster"
    prompts = server.prompts()
    assert prompts and all(p.startswith(task) for p in prompts)
    charges = [e for e in result.run.events(Charge) if e.kind == "brain"]
    assert len(charges) == len(prompts) and all(e.cost["calls"] == 1 for e in charges)
    kept = [s for s in record["steps"] if s["kept"]]
    assert kept and record["best_speedup"] > 1  # omp simd on the dot reduction, through the model
