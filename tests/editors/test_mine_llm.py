"""Whole mines driven by the API brains over loopback HTTP: record, replay, budget, resume.

On the null backend: what is tested is the brain's traffic, the cassette and the run's log, not
the gate (tests/gate), and the model's exact times make every verdict, and so every request after
the walk, the same on any machine."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from conftest import FIXTURES
from editors.conftest import config_for
from editors.fake_llm import FakeLLM, rules_brain
from klineage.errors import BrainError
from klineage.lineage import ProposalRejected, StepAccepted, WalkLimits
from klineage.mine import MineOptions, mine
from klineage.runs import Budget, BudgetChanged, Charge, RunDir
from klineage.workload import load_kernel, load_workload


def _options(gate, url, **extra):
    return MineOptions(limits=WalkLimits(max_steps=10, max_rejections=10), gate=gate,
                       config=config_for(url), **extra)


def _mine(tmp_path, options, resume=None):
    workload = load_workload(FIXTURES / "axpy")
    return mine(workload, load_kernel(workload, "expert"), tmp_path / "runs", None, options, resume)


def _decisions(run):
    return [(e.event, (e.transition if isinstance(e, StepAccepted) else e.rejection).feature)
            for e in run.events(StepAccepted, ProposalRejected)]


def _assert_naive_and_charged(result, brain):
    summary = result.summary()
    assert summary["naive_reached"], summary["stop_reason"]
    assert set(summary["features_removed"]) >= {"omp_parallel", "omp_simd", "restrict", "unroll"}
    charges = result.run.events(Charge)
    whats = {e.what for e in charges if e.kind == "brain"}
    assert {f"{brain}.simplify@v2", f"{brain}.rederive@v2"} <= whats
    assert summary["spent"]["calls"] == sum(e.cost["calls"] for e in charges if e.kind == "brain")
    assert summary["spent"]["usd"] > 0 and summary["spent"]["gate_runs"] > 0


def test_openai_mine_records_and_a_replay_reproduces_its_decisions(tmp_path, null_gate, secret_keys):
    cassette = tmp_path / "cassette.jsonl"
    server = FakeLLM()
    try:
        recorded = _mine(tmp_path, _options(null_gate, server.url, brain="openai", record=cassette,
                                            admit_on=(FIXTURES / "scale",)))
    finally:
        server.stop()
    _assert_naive_and_charged(recorded, "openai")
    prompts = {json.loads(line)["prompt"] for line in cassette.read_text().splitlines()}
    assert prompts >= {"simplify@v2", "rederive@v2"}
    assert recorded.cards and {"lift@v2", "materialize@v2"} <= prompts
    # the server is gone: every answer now comes from the cassette
    replayed = _mine(tmp_path, _options(null_gate, server.url, brain="replay", replay=cassette,
                                        admit_on=(FIXTURES / "scale",)))
    assert _decisions(replayed.run) == _decisions(recorded.run)
    assert [c.id for c in replayed.cards] == [c.id for c in recorded.cards]
    # no API key anywhere in what the runs and the cassette wrote
    for path in [cassette, *(tmp_path / "runs").rglob("*")]:
        if path.is_file():
            assert secret_keys not in path.read_text(errors="replace"), path


def test_a_replay_that_diverges_fails_clearly(tmp_path, null_gate):
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text("")
    with pytest.raises(BrainError, match="has no recorded answer for this simplify@v2 request"):
        _mine(tmp_path, _options(null_gate, "http://127.0.0.1:9", brain="openai", replay=cassette,
                                 admit_on=()))


def test_server_down_mid_run_keeps_the_run_and_resume_finishes(tmp_path, null_gate):
    server = FakeLLM()
    answered = []

    def brain_then_vanish(prompt):
        answered.append(prompt)
        if len(answered) == 3:  # this answer is the last one: the server goes away after it
            threading.Thread(target=server.stop, daemon=True).start()
        return rules_brain(prompt)

    server.brain = brain_then_vanish
    with pytest.raises(BrainError,
                       match=r"cannot reach the brain.*continue it with klineage mine \S+ --resume") as info:
        _mine(tmp_path, _options(null_gate, server.url, brain="openai", admit_on=()))
    run_path = info.value.args[0].rsplit("--resume ", 1)[1].split()[0]  # then its gate flags
    events = [json.loads(line) for line in Path(run_path, "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "run_interrupted"
    before = [e["transition"]["feature"] for e in events if e["event"] == "step_accepted"]
    assert len(before) == 3

    again = FakeLLM()
    try:
        result = _mine(tmp_path, _options(null_gate, again.url, brain="openai", admit_on=()), resume=run_path)
    finally:
        again.stop()
    assert result.summary()["features_removed"][:3] == before
    assert result.lineage.naive_reached
    steps = [e.transition.step for e in result.run.events(StepAccepted)]
    assert steps == sorted(set(steps)), "an accepted step was redone"


def test_anthropic_mine_stops_at_its_budget_and_resume_finishes_it(tmp_path, null_gate, fake_llm):
    first = _mine(tmp_path, _options(null_gate, fake_llm.url, brain="anthropic", admit_on=(),
                                     budget=Budget(calls=2)))
    summary = first.summary()
    assert summary["stop_reason"] == "budget reached: brain calls 2 of 2"
    assert summary["steps_accepted"] == 2 and summary["spent"]["calls"] == 2
    assert summary["budget_reached"] and not summary["cards_lifted"]
    assert all("not tried" in note for note in summary["notes"])  # re-derivation waits
    assert len(fake_llm.requests) == 2

    # resumed with no limit, given explicitly: the walk goes on from step 3 and the whole mine
    # finishes; the new budget is an event and is in run.json
    second = _mine(tmp_path, _options(null_gate, fake_llm.url, brain="anthropic", admit_on=(),
                                      budget=Budget()), resume=first.run.path)
    assert [(e.old, e.new) for e in second.run.events(BudgetChanged)] == [("calls=2", "unlimited")]
    assert RunDir.open(first.run.path).meta["budget"]["calls"] is None
    _assert_naive_and_charged(second, "anthropic")
    summary = second.summary()
    assert summary["features_removed"][:2] == first.summary()["features_removed"]
    assert summary["spent"]["calls"] == len(fake_llm.requests) and summary["budget_reached"] is None
    assert all(t.removal_diff and t.sites for t in second.lineage.transitions)
    steps = [e.transition.step for e in second.run.events(StepAccepted)]
    assert steps == [1, 2, 3, 4]
