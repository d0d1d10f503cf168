"""Mining end to end on a small fixture, and a run killed mid-walk that resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import FIXTURES
from klineage.lineage import WalkLimits
from klineage.mine import MineOptions, mine
from klineage.skills.library import Library
from klineage.workload import load_kernel, load_workload


def _options(quick):
    return MineOptions(limits=WalkLimits(max_steps=10, max_rejections=10), gate=quick,
                       admit_on=(FIXTURES / "scale",))


def test_mine_walks_the_axpy_expert_to_naive(tmp_path, quick):
    workload = load_workload(FIXTURES / "axpy")
    result = mine(workload, load_kernel(workload, "expert"), tmp_path / "runs", tmp_path / "library",
                  _options(quick))
    lineage = result.lineage
    assert len(lineage.transitions) >= 4, lineage.stop_reason
    assert lineage.naive_reached, lineage.remaining_features
    assert lineage.stop_reason.startswith("naive")
    assert {t.feature for t in lineage.transitions} >= {"omp_parallel", "omp_simd", "restrict"}
    # every step was re-derived from the simpler kernel, reproduced or with a reason
    assert all(t.rederivation is not None and t.rederivation.note for t in lineage.transitions)
    events = result.run.event_kinds()
    assert events.count("step_accepted") == len(lineage.transitions)
    assert (result.run.path / "lineage.json").is_file()
    # each step either became a card or says why not (no reproduction, no measurable effect)
    assert len(result.cards) + len(result.notes) == len(lineage.transitions)
    library = Library.open(tmp_path / "library")
    assert len(library.cards(admitted_only=False)) == len(result.cards)
    for card in result.cards:  # every lifted card carries every field, grounded
        assert card.intent and card.anchor and card.carrier.diff and card.effect
        # the measured effect carries its interval, and its times give its speedup
        assert all(e.ci_low is not None and e.ci_low <= e.ratio <= e.ci_high for e in card.effect)
        assert all(abs(e.ratio - e.before_ms / e.after_ms) < 1e-9 * e.ratio for e in card.effect)
        assert any(p.category == "dtype" for p in card.preconditions)
        assert card.provides == [card.feature] and card.evidence.transitions
        assert card.verification, "admission must record at least one trial"


def _mine_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "klineage.cli", "mine", str(FIXTURES / "axpy"), "--expert", "expert",
            "--admit-on", str(FIXTURES / "scale"), *args]


def test_sigkill_mid_walk_then_resume(tmp_path):
    # On the null backend: what is tested is the log and the resume, not the gate.
    env = {**os.environ, "KLINEAGE_CACHE_DIR": str(tmp_path / "cache")}
    runs = tmp_path / "runs"
    process = subprocess.Popen(_mine_command("--runs", str(runs), "--json", "--backend", "null"), env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    events = None
    while time.monotonic() < deadline and process.poll() is None:
        logs = list(runs.glob("*/events.jsonl"))
        if logs and logs[0].read_text().count('"step_accepted"') >= 2:
            events = logs[0]
            break
        time.sleep(0.2)
    assert events is not None, "the walk never reached two accepted steps"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = [json.loads(line) for line in events.read_text().splitlines() if line.endswith("}")]
    accepted_before = [e["transition"]["feature"] for e in before if e["event"] == "step_accepted"]

    proc = subprocess.run(_mine_command("--runs", str(runs), "--resume", str(events.parent), "--json",
                                        "--backend", "null"),
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["features_removed"][: len(accepted_before)] == accepted_before
    after = [json.loads(line) for line in Path(events).read_text().splitlines() if line.endswith("}")]
    steps = [e["transition"]["step"] for e in after if e["event"] == "step_accepted"]
    assert steps == sorted(set(steps)), "an accepted step was redone"
    assert summary["naive_reached"]
