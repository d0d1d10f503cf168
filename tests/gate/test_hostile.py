"""The red team's catalogue (tests/gate/hostile/CATALOGUE.toml): hostile kernels of every class of
the threat model, and honest kernels that look suspicious. Written from the threat model alone,
by a session that did not read the gate's code.

Two layers are tested apart: the whole gate (static checks first), and the sandbox alone, with
the static checks skipped, so that every attack the static check stops is also stopped by the
runner's sandbox (seccomp, read-only inputs, guard pages, CPU accounting, the clocks).
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from klineage.backends import backend_for
from klineage.gate import GateOptions, Limits, Verdict, run_gate
from klineage.gate._job import GateJob, run_sandboxed
from klineage.gate._layout import TimingPlan
from klineage.workload import load_kernel

HOSTILE = Path(__file__).parent / "hostile"
CATALOGUE = tomllib.loads((HOSTILE / "CATALOGUE.toml").read_text())
CPU = sorted(name for name, entry in CATALOGUE.items() if entry["backend"] == "cpu")
CUDA = sorted(name for name, entry in CATALOGUE.items() if entry["backend"] == "cuda")
OPTIONS = GateOptions(trials=3, target_trial_s=0.005, warmup_s=0.01, max_sets=3, compare_s=0.5,
                      min_pairs=12, limits=Limits(stall_s=5, memory_bytes=1 << 30))


@pytest.fixture(autouse=True)
def _credentials_in_our_environment(monkeypatch):
    """The environment probes must have something to find, were ours to leak to a kernel."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-red-team-probe")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-red-team-probe")
    monkeypatch.setenv("HF_TOKEN", "hf_red_team_probe")


def _folder(name: str) -> Path:
    return (HOSTILE / CATALOGUE[name].get("path", name)).resolve()


def _expected(name: str) -> list[str]:
    """The verdicts a correct gate may give; where that is 'accepted', also 'unmeasurable': a
    correct kernel timed while other processes held the cores its threads claim is not timed
    (gate._noise.contention), which refuses a timing, never a kernel."""
    want = CATALOGUE[name]["expected_verdict"]
    verdicts = [want] if isinstance(want, str) else list(want)
    return [*verdicts, "unmeasurable"] if "accepted" in verdicts else verdicts


def test_catalogue_names_every_folder():
    folders = {p.name for p in HOSTILE.iterdir() if p.is_dir()}
    honest = {p.name for p in (HOSTILE.parent / "honest").iterdir() if p.is_dir()}
    listed = {Path(CATALOGUE[n].get("path", n)).name for n in CATALOGUE}
    assert listed == folders | honest
    assert all(v in {x.value for x in Verdict} for n in CATALOGUE for v in _expected(n))


def _options(name: str) -> GateOptions:
    """OPTIONS, with trials enough that a kernel honest for its first ``honest_calls`` calls is
    timed on twice as many (at least 3 a trial): a gate catches it only by making more calls than
    that, and how many calls a trial of ``target_trial_s`` holds depends on the machine (on a slow
    one, 3 a trial, 22 calls in all: every_kth_call was honest throughout and accepted)."""
    honest = CATALOGUE[name].get("honest_calls", 0)
    return replace(OPTIONS, trials=max(OPTIONS.trials, -(-2 * honest // 3)))


@pytest.mark.parametrize("name", CPU)
def test_the_gate_gives_each_kernel_its_verdict(name, axpy):
    report = run_gate(axpy, load_kernel(axpy, _folder(name)), options=_options(name))
    assert report.verdict.value in _expected(name), f"{CATALOGUE[name]['why']}\n{report.reason}"
    assert CATALOGUE[name].get("reason_contains", "") in report.reason


def _probes() -> list[str]:
    """Hostile CPU kernels a correct gate rejects but never calls incorrect (probes), and those
    the catalogue gives a verdict of their own without the static check."""
    return [n for n in CPU if "path" not in CATALOGUE[n] and (
        "sandbox_verdict" in CATALOGUE[n]
        or ("rejected_cheat" in _expected(n) and "incorrect" not in _expected(n)))]


def _sandbox_alone(axpy, name: str, threads: int | None = None):
    """(the sandbox's result, the build) of one catalogue kernel, the static check skipped."""
    kernel = load_kernel(axpy, _folder(name))
    backend = backend_for(kernel.language)
    build = backend.build(kernel)
    assert build.ok, build.log
    timing = TimingPlan(trials=2, target_trial_s=0.005, warmup_s=0.01, max_reps=50, min_sets=3,
                        max_sets=3, max_footprint_bytes=1 << 30, cache_bytes=0, compare_s=0.5,
                        min_pairs=12, max_pairs=100, seed=7)
    job = GateJob(mode="gate", threads=threads or kernel.threads or 2, seeds=[0, 1, 4242], timing=timing)
    result = run_sandboxed(axpy, backend, job, [(build, kernel.entry)], 5.0, 1 << 30,
                           lambda stage, detail: None)
    return result, build


@pytest.mark.parametrize("name", _probes())
def test_the_sandbox_alone_stops_what_the_static_check_stops(name, axpy):
    # Probes poison y[0] only when the forbidden operation succeeded, so a hole is 'incorrect';
    # a refused call that the kernel survives ('ok') or a trapped one ('rejected_cheat',
    # 'crashed') means the sandbox held.
    result, _ = _sandbox_alone(axpy, name)
    allowed = [CATALOGUE[name]["sandbox_verdict"]] if "sandbox_verdict" in CATALOGUE[name] else [
        "ok", "rejected_cheat", "crashed", "timeout"]
    assert result.outcome in allowed, f"{CATALOGUE[name]['why']}\n{result.reason}"


def test_a_trapped_call_is_named_with_where_it_came_from(axpy):
    # The runner writes the trapped call's stack to its log; the reason names the kernel's
    # function that made it (libc's fork wrapper and the runner's handler left out).
    result, build = _sandbox_alone(axpy, "exec_fork", threads=1)
    assert result.outcome == "rejected_cheat", result.reason
    assert "(clone)" in result.reason, result.reason
    assert f"its log names the caller: {build.artifact.name}(kl_launch)" in result.reason, result.reason


def test_a_forged_trap_stack_is_cut_to_a_short_printable_hint():
    from klineage.gate._runner_log import trap_site

    forged = "KL_TRAP_STACK\n/x/libevil" + "A" * 60_000 + ".so(nvmlInit\x1b[2J+0x1) [0x1]\n"
    site = trap_site(forged)
    assert len(site) <= 240 and "\x1b" not in site and site.startswith("libevilAAA")


@pytest.mark.gpu
@pytest.mark.parametrize("name", CUDA)
def test_cuda_kernels_get_their_verdict(name):
    from conftest import FIXTURES
    from klineage.workload import load_workload

    workload = load_workload(FIXTURES / "axpy_cuda")
    options = GateOptions(trials=3, target_trial_s=0.02, max_sets=3,
                          limits=Limits(stall_s=60, memory_bytes=None))
    report = run_gate(workload, load_kernel(workload, _folder(name)), options=options)
    assert report.verdict.value in _expected(name), f"{CATALOGUE[name]['why']}\n{report.reason}"
    assert CATALOGUE[name].get("reason_contains", "") in report.reason


def test_a_dying_runners_reason_quotes_its_exception_not_the_advice_after_it():
    from klineage.gate._runner_log import telling_line

    log = ("Traceback (most recent call last):\n  File \"kernel.py\", line 3, in forward\n"
           "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\n"
           "CUDA kernel errors might be asynchronously reported at some other API call.\n"
           "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
           "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
    assert telling_line(log).startswith("torch.AcceleratorError: CUDA error: no kernel image")
    assert telling_line("warming up\nsegfault soon\n") == "segfault soon"
    assert telling_line("") == ""
