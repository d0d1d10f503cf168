"""The forward loop on small fixtures: keep only what is faster, stop for each reason, feed
failures back into the library."""

from __future__ import annotations

import json

from conftest import FIXTURES
from klineage.optimize import CandidateGated, MethodInputs, OptimizeOptions, optimize
from klineage.runs import Budget
from klineage.skills.library import Library
from klineage.workload import load_kernel, load_workload


def _run(workload, start, library, budget, quick, tmp_path, **kwargs):
    inputs = MethodInputs(cards=library.cards()) if library is not None else MethodInputs()
    kwargs.setdefault("sol_target", 100.0)  # in cache, the fixtures can pass the DRAM bound
    options = OptimizeOptions(budget=Budget.parse(budget), gate=quick, **kwargs)
    return optimize(workload, start, library, options, runs_root=tmp_path / "runs", inputs=inputs)


def test_klineage_keeps_the_faster_kernel_and_records_every_candidate(dot, dot_naive, library,
                                                                       quick, tmp_path):
    result = _run(dot, dot_naive, library, "gate_runs=6", quick, tmp_path)
    record = json.loads((result.run.path / "optimize.json").read_text())
    assert record == result.record
    assert record["status"] == "ok" and record["method"] == "klineage"
    steps = record["steps"]
    ranked = [r["id"] for r in record["retrieval"] if r["chosen"]]
    assert [s["skill"] for s in steps] == ranked[: len(steps)], "candidates follow retrieval rank"
    assert steps[0]["feature"] == "unroll" and steps[0]["verdict"] == "compile_error"
    kept = [s for s in steps if s["kept"]]
    assert kept and all(s["verdict"] == "accepted" and s["ratio"] < 1 for s in kept)
    assert all(not s["kept"] for s in steps if s["verdict"] != "accepted")
    # and every "accepted" step was kept: a correct candidate not faster is "slower"
    assert all(s["kept"] for s in steps if s["verdict"] == "accepted")
    assert record["best_state"] == kept[-1]["candidate"]
    assert record["best_speedup"] > 1 and record["sol_fraction"] > 0
    best = (result.run.path / "best" / "kernel.c").read_text()
    assert "#pragma omp simd" in best and record["best_kernel"].endswith("kernel.c")
    for step in steps:  # every candidate is data: verdict, reason, spend and diff
        assert step["reason"] and step["spent"]["gate_runs"] >= 1
        assert step["diff"].startswith("--- a/kernel") or step["verdict"] == "no_proposal"
    curve = record["curve"]
    assert curve[0]["best_speedup"] == 1.0 and curve[0]["gate_runs"] == 1
    assert [p["best_speedup"] for p in curve] == sorted(p["best_speedup"] for p in curve)
    assert len(result.run.events(CandidateGated)) == len(steps)
    assert {r["feature"] for r in record["retrieval"] if r["chosen"]} == {"omp_simd", "restrict",
                                                                           "unroll"}


def test_failed_candidates_become_risk_evidence_on_the_card(dot, dot_naive, library, quick, tmp_path):
    result = _run(dot, dot_naive, library, "gate_runs=6", quick, tmp_path)
    failed = [s for s in result.record["steps"] if s["verdict"] == "compile_error"]
    assert [s["feature"] for s in failed] == ["unroll"]
    unroll = library.get(failed[0]["skill"])
    trial = unroll.verification[-1]
    assert trial.verdict == "compile_error" and trial.target == "dot/naive" and trial.held_out
    assert any("compile_error on dot/naive" in r.what for r in unroll.risk)
    simd = next(c for c in library.cards() if c.feature == "omp_simd")
    assert simd.verification[-1].target == "dot/naive"


def test_budget_stop(quick, tmp_path, library):
    axpy = load_workload(FIXTURES / "axpy")
    result = _run(axpy, load_kernel(axpy, "plain"), library, "gate_runs=2", quick, tmp_path)
    record = result.record
    assert record["stop_reason"] == "budget reached: gate runs 2 of 2"
    assert record["spent"]["gate_runs"] == 2
    gated = [s for s in record["steps"] if s["verdict"] not in ("duplicate", "no_proposal")]
    assert len(gated) == 1 and gated[0]["reason"]


def test_sol_target_stop(dot, dot_naive, library, quick, tmp_path):
    result = _run(dot, dot_naive, library, "gate_runs=6", quick, tmp_path, sol_target=1e-6)
    assert result.stop_reason.startswith("reached ") and "speed of light" in result.stop_reason
    assert result.record["steps"] == [] and result.best_speedup == 1.0


def test_with_no_card_klineage_goes_on_with_the_insertion_passes_until_none_is_left(
        dot, dot_naive, quick, tmp_path):
    empty = Library.open(tmp_path / "empty", create=True)
    result = _run(dot, dot_naive, empty, "gate_runs=20", quick, tmp_path)
    assert result.stop_reason.startswith(
        "no candidate left to the best kernel; the insertion passes made none: ")
    steps = result.record["steps"]
    assert steps and all(s["skill"] is None and s["feature"] for s in steps)
    assert len({(s["candidate"], s["feature"]) for s in steps}) == len(steps)


def test_start_kernel_that_fails_the_gate_is_a_failed_run(tmp_path, quick, library):
    axpy = load_workload(FIXTURES / "axpy")
    broken = tmp_path / "broken.c"
    source = load_kernel(axpy, "plain").source.read_text()
    broken.write_text(source.replace("alpha * x[i] + z[i]", "alpha * x[i]"))
    result = _run(axpy, load_kernel(axpy, broken), library, "gate_runs=4", quick, tmp_path)
    assert result.record["status"] == "failed" and result.best_speedup is None
    assert result.stop_reason.startswith("the start kernel failed the gate: incorrect")


def test_a_broken_workload_beside_yours_does_not_stop_your_run(tmp_path, null_gate):
    """optimize loaded every sibling folder with a workload.toml, for every method, and failed
    naming a folder the user never mentioned. Now only expert-source reads them, and skips a
    broken one with a line saying so."""
    import shutil

    shutil.copytree(FIXTURES / "dot", tmp_path / "dot")
    shutil.copytree(FIXTURES / "axpy", tmp_path / "axpy")
    (tmp_path / "axpy" / "workload.toml").write_text("name = [broken\n")
    (tmp_path / "axpy" / "kernels" / "expert").mkdir(exist_ok=True)
    dot = load_workload(tmp_path / "dot")
    said: list[str] = []
    for method in ("none", "expert-source"):
        options = OptimizeOptions(method=method, budget=Budget(gate_runs=1), gate=null_gate,
                                  sol_target=100.0)
        result = optimize(dot, load_kernel(dot, "naive"), None, options, runs_root=tmp_path / "runs",
                          say=said.append)
        assert result.record["status"] == "ok"
    skipped = [line for line in said if line.startswith("skipped")]
    assert len(skipped) == 1 and str(tmp_path / "axpy") in skipped[0], said
