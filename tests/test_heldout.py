"""The held-out workloads of benchmarks/bench_llm.py: complete, in the styles the README names,
and never part of what is mined (examples/workloads is)."""

from __future__ import annotations

from conftest import REPO
from klineage.gate import Verdict, run_gate
from klineage.workload import load_kernel, load_workload

HELD_OUT = REPO / "examples" / "heldout"
FOLDERS = sorted(p for p in HELD_OUT.glob("*/*") if (p / "workload.toml").is_file())


def test_at_least_six_cpu_and_four_cuda_workloads_each_with_naive_and_expert():
    kinds = {"cpu": 0, "cuda": 0}
    for folder in FOLDERS:
        workload = load_workload(folder)
        assert set(workload.kernel_variants()) == {"naive", "expert"}, folder.name
        languages = {load_kernel(workload, v).language for v in ("naive", "expert")}
        assert languages <= ({"cuda"} if folder.parent.name == "cuda" else {"c", "cpp"}), folder.name
        assert workload.check_shapes, f"{folder.name}: correctness needs more than one size"
        kinds[folder.parent.name] += 1
    assert kinds["cpu"] >= 6 and kinds["cuda"] >= 4
    assert any(load_kernel(load_workload(f), "naive").language == "cpp" for f in FOLDERS)


def test_nothing_held_out_shares_a_name_with_a_mined_example():
    mined = {p.name for p in (REPO / "examples" / "workloads").glob("*/*")}
    assert not mined & {f.name for f in FOLDERS}


def test_a_held_out_cpu_pair_passes_the_gate(quick):
    # one, for the format; the helper that wrote them gated all ten (examples/heldout/README.md)
    workload = load_workload(HELD_OUT / "cpu" / "cumsum_ptr", quick=True)
    for variant in ("naive", "expert"):
        report = run_gate(workload, load_kernel(workload, variant), options=quick)
        assert report.verdict is Verdict.ACCEPTED, f"{variant}: {report.reason}"
