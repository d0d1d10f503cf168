"""With an LLM brain the loop spends its budget: klineage's single cards, a failed card retried
with the gate's feedback, the cards together, then improvements from the best kernel; baselines
keep improving from feedback. Driven over loopback HTTP by a fake model (``editors.fake_llm``)
that answers from the prompt as a model would."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from editors.conftest import config_for
from editors.fake_llm import Action, FakeLLM
from klineage.errors import GateWaiting
from klineage.executors import using
from klineage.executors.spool import SpoolExecutor, serve
from klineage.gate import GateReport, Verdict
from klineage.optimize import MethodInputs, OptimizeOptions, optimize
from klineage.optimize._feedback import Attempt, History
from klineage.runs import Budget
from klineage.skills.library import Library


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    fake = FakeLLM()
    yield fake
    fake.stop()


def _run(server, dot, dot_naive, library, gate, tmp_path, method, budget, resume=None):
    options = OptimizeOptions(budget=Budget.parse(budget), brain="openai", method=method, gate=gate,
                              sol_target=100.0, config=config_for(server.url))
    return optimize(dot, dot_naive if resume is None else None, library, options,
                    runs_root=tmp_path / "runs", inputs=MethodInputs(cards=library.cards()),
                    resume=resume)


def _task(prompt: str) -> str:
    return prompt.splitlines()[0]


def test_klineage_with_an_llm_spends_its_budget_single_cards_retry_together_improve(
        server, dot, dot_naive, library, quick, tmp_path):
    # the rules brain stops after the three cards; the model goes on until the budget ends
    result = _run(server, dot, dot_naive, library, quick, tmp_path, "klineage", "calls=7")
    prompts = server.prompts()
    tasks = [_task(p) for p in prompts]
    assert len(prompts) == 7 and result.stop_reason == "budget reached: brain calls 7 of 7"
    # the unroll card (ranked first) does not compile: its retry shows the compiler's error and
    # the failed attempt as a diff
    assert tasks[0] == tasks[1] == "# Task: apply a skill card: unroll"
    assert "compile_error: compile:" in prompts[1] and "Your last attempt, as a diff" in prompts[1]
    assert "compile_error" not in prompts[0]
    steps = result.record["steps"]
    # The cards together come when two or more still apply to the best kernel. restrict has no
    # measurable effect on dot; when noise calls it faster it is kept, and then only the failed
    # unroll card still applies (one fresh-clone run out of several did so).
    if not any(s["kept"] and s["feature"] == "restrict" for s in steps):
        assert "# Task: apply these skill cards together" in tasks
    improving = [p for p in prompts if p.startswith("# Task: make this kernel faster")]
    assert improving, tasks
    # improvements from the best kernel carry the cards that still apply, every field of them
    assert all("Verified skill cards that apply" in p or "No skill card applies" in p for p in improving)
    assert [s["verdict"] for s in steps][:1] == ["compile_error"]
    assert any(s["kept"] for s in steps) and result.best_speedup > 1
    # every later prompt reports the gate's standing on the current kernel
    assert all("The current kernel passed the gate:" in p for p in prompts)


def test_a_baseline_with_an_llm_keeps_improving_from_feedback_until_the_budget(
        server, dot, dot_naive, library, quick, tmp_path):
    result = _run(server, dot, dot_naive, library, quick, tmp_path, "none", "calls=4")
    prompts = server.prompts()
    assert len(prompts) == 4 and result.stop_reason == "budget reached: brain calls 4 of 4"
    assert all(p.startswith("# Task: make this kernel faster") for p in prompts)
    assert "## Knowledge you are given\nNothing beyond the workload" in prompts[0]
    # each answer is told what came of the ones before (on this version or the earlier ones)
    assert all(re.search(r"Attempts on this version so far|Earlier versions", p) for p in prompts[1:])
    assert len(result.record["steps"]) == 4 and any(s["kept"] for s in result.record["steps"])
    assert result.record["spent"]["calls"] == 4
    assert [p["calls"] for p in result.record["curve"]] == [0, 1, 2], "the curve counts calls"


def test_an_llm_that_gives_no_new_kernel_stops_the_run_and_says_why(
        server, dot, dot_naive, library, quick, tmp_path):
    server.script = [Action("answer", "I would rather not.") for _ in range(5)]
    result = _run(server, dot, dot_naive, library, quick, tmp_path, "none", "gate_runs=20")
    assert result.stop_reason == "the brain gave no new kernel in 3 answers in a row"
    assert [s["verdict"] for s in result.record["steps"]] == ["no_proposal"] * 3
    assert len(server.prompts()) == 3


def test_a_resumed_llm_run_tells_the_brain_what_an_uninterrupted_one_would(
        server, dot, dot_naive, library, quick, tmp_path):
    first = _run(server, dot, dot_naive, library, quick, tmp_path, "klineage", "calls=2")
    told_before = server.prompts()[-1]
    _run(server, dot, dot_naive, library, quick, tmp_path, "klineage", "calls=3", resume=first.run.path)
    resumed = server.prompts()[-1]
    # the third call sees both earlier attempts on the start kernel, rebuilt from the run's log
    assert "1. card" in resumed and "2. retry of card" in resumed
    assert "compile_error" in told_before and "compile_error" in resumed


def _report(verdict: Verdict, reason: str) -> GateReport:
    return GateReport(verdict=verdict, reason=reason, fingerprint="f", workload="w",
                      workload_fingerprint="wf", kernel="k", kernel_source="", backend="cpu",
                      platform="cpu", threads=1, toolchain={})


def test_feedback_is_trimmed_to_what_says_what_to_fix():
    history = History()
    log = "\n".join(f"kernel.c:{i}: error: bad thing {i}" for i in range(40))
    history.add(Attempt("card abc (unroll)", "compile_error", f"compile: {log}", diff="-a\n+b"))
    history.add(Attempt("improvement", "slower", "paired time ratio 1.250", ratio=1.25))
    text = history.text(_report(Verdict.ACCEPTED, ""), 2.0, 0.010)
    assert text.startswith("The current kernel passed the gate: about 5.000 ms, 2.00x faster")
    assert "bad thing 0" in text and "bad thing 39" not in text and "more lines)" in text
    assert "2. improvement: slower: correct, 25% slower than the current kernel" in text
    assert "Your last attempt" not in text, "the last one was correct: no diff to fix"
    history.kept(Attempt("card def (omp_simd)", "accepted", "ratio 0.5"))
    text = history.text(None, 3.0, None)
    assert "Earlier versions of this kernel" in text and "card def (omp_simd): kept" in text
    assert "Attempts on this version" not in text


def test_a_run_left_waiting_for_a_spool_resumes_without_asking_the_brain_again(
        server, dot, dot_naive, library, null_gate, tmp_path, spool_key):
    # --no-wait on a spool: the run stops at every gate job (after the brain answered), and
    # each resume takes the worker's results up; the brain is asked what an uninterrupted run
    # asks, once each, and each call is charged once.
    shutil.copytree(library.root, tmp_path / "library-copy")  # the first run writes trials back
    options = OptimizeOptions(budget=Budget.parse("calls=3"), brain="openai", method="klineage",
                              gate=null_gate, sol_target=100.0, config=config_for(server.url))
    local = optimize(dot, dot_naive, library, options, runs_root=tmp_path / "local",
                     inputs=MethodInputs(cards=library.cards()))
    asked_locally = server.prompts()
    copy = Library.open(tmp_path / "library-copy")
    spool, run, stops = tmp_path / "spool", None, 0
    while True:
        with using(SpoolExecutor(spool, wait=False)):
            try:
                split = optimize(dot, dot_naive if run is None else None, copy, options,
                                 runs_root=tmp_path / "split", resume=run,
                                 inputs=MethodInputs(cards=copy.cards()))
                break
            except GateWaiting as exc:
                run = Path(re.search(r"--resume (\S+)", str(exc)).group(1))
                stops += 1
        assert serve(spool, once=True) >= 1
    asked_split = server.prompts()[len(asked_locally):]
    assert stops >= 4 and asked_split == asked_locally
    assert split.record["spent"]["calls"] == local.record["spent"]["calls"] == 3
    assert split.record["spent"]["gate_runs"] == local.record["spent"]["gate_runs"]
    assert ([(s["verdict"], s["kept"]) for s in split.record["steps"]]
            == [(s["verdict"], s["kept"]) for s in local.record["steps"]])
    assert (split.run.path / "brain.jsonl").is_file()
