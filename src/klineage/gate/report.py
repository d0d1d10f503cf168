"""Gate results as data: the verdict, each stage, timing, speed of light, comparison."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ClockCheck", "Comparison", "GateReport", "SpeedOfLight", "StageResult", "TimingStats", "Verdict"]

SCHEMA_VERSION = 1


class Verdict(StrEnum):
    """The one outcome of a gate run."""

    ACCEPTED = "accepted"
    """Compiled, correct on every size and seed, profiled, within speed of light (and faster
    than the baseline when one was given)."""
    COMPILE_ERROR = "compile_error"
    """The compiler rejected the source; the report carries the trimmed log."""
    INCORRECT = "incorrect"
    """Ran, but an output was wrong, unwritten, NaN/Inf where the reference is finite, or an
    input was modified."""
    CRASHED = "crashed"
    """The kernel's process died (signal, abort, out of memory) or kl_launch returned non-zero."""
    TIMEOUT = "timeout"
    """No progress within the time limit (a hang or a far too slow kernel)."""
    REJECTED_CHEAT = "rejected_cheat"
    """Forbidden calls or symbols, work escaping the timed stream, or faster than the bound."""
    SLOWER = "slower"
    """Correct, but not shown faster than the baseline by the paired comparison."""
    UNMEASURABLE = "unmeasurable"
    """Correct, but its timing was too noisy to decide anything, measured twice (another process
    loaded the machine): no time, speedup or comparison is claimed."""


class StageResult(BaseModel):
    """One stage of the gate: static, compile, correctness, profile, speed_of_light, compare."""

    name: str
    ok: bool
    seconds: float = 0.0
    detail: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


class ClockCheck(BaseModel):
    """Whether a runner's own clock was believed: how far it read short of the trusted side's
    round trip (its gap), against how far the trusted calibration kernel's clock did."""

    gap_s: float = Field(description="Median of (trusted round trip - the runner's reading)")
    calibration_gap_s: float | None = Field(
        description="The same median for the calibration kernel (None: a modeled backend, whose "
        "runner's reading is the model's time, is not calibrated)")
    allowance_s: float | None = Field(
        description="The largest gap believed: the calibration's + 3 standard errors of the two "
        "medians' difference + 2% of the runner's median reading")
    believed: bool = Field(description="gap_s <= allowance_s")
    raised_share: float = Field(
        description="Share of calls timed by the trusted clock (round trip less the calibration "
        "gap) instead of the runner's own: 0 when its clock was used")


class TimingStats(BaseModel):
    """Median of trial medians, with the spread across trials."""

    median_s: float
    spread: float = Field(description="(max - min) / median of the trial medians")
    trial_medians_s: list[float]
    reps_per_trial: int
    samples: int
    min_s: float
    wall_median_s: float = Field(description="Per call, to a full device synchronisation")
    input_sets: int
    footprint_bytes: int = Field(description="Bytes of all rotated input and output sets")
    threads: int | None = None
    clock: ClockCheck | None = None
    other_cores: float | None = Field(
        default=None, description="CPU that other processes used while this was timed (and, on "
        "a VM, the time the hypervisor stole), in cores; None where it cannot be read")


class SpeedOfLight(BaseModel):
    """The result against the platform's measured ceilings."""

    bytes: float | None
    flops: float | None
    bandwidth_gbps: float
    compute_gflops: float
    achieved_gbps: float | None
    achieved_gflops: float | None
    bound_s: float | None = Field(description="The fastest time the ceilings allow")
    fraction: float | None = Field(description="bound_s / median: share of speed of light")
    limiter: str | None = Field(description="'memory' or 'compute': the larger term")
    memory_enforced: bool = Field(
        description="False when the rotated working set fits in cache, so beating DRAM "
        "bandwidth is honest and only the compute term is enforced"
    )


class Comparison(BaseModel):
    """Paired, interleaved A-vs-B timing, each kernel in its own runner.
    ratio = time(candidate) / time(baseline)."""

    baseline: str
    candidate: str
    ratio: float
    ci_low: float
    ci_high: float
    pairs: int
    decision: str = Field(
        description="'faster', 'slower' or 'same' at the confidence level; 'unmeasurable' when "
        "the interval stayed too wide to tell a difference that matters, measured twice")
    confidence: float = 0.95
    baseline_median_s: float | None = None
    candidate_median_s: float | None = Field(
        default=None, description="The baseline's median times the paired ratio: the times of a "
        "comparison always give its ratio")
    baseline_solo_s: float | None = Field(
        default=None, description="The baseline's median alone, timed before the candidate's "
        "runner started, on the clock its pairs were timed by; a "
        "baseline_median_s beside the candidate slower than this beyond noise (at least 20%) makes "
        "the decision 'unmeasurable'. None in comparisons made before it was measured")
    baseline_clock: ClockCheck | None = None
    candidate_clock: ClockCheck | None = Field(
        default=None, description="Both sides are timed by one clock: the runners' own when "
        "both were believed, else the trusted one for both")
    other_cores: float | None = Field(
        default=None, description="CPU other processes used while the pairs were timed, in cores")
    reason: str = Field(
        default="", description="Why the comparison could not decide, where it is 'unmeasurable'")


class GateReport(BaseModel):
    """The whole record of one gate run; the JSON that ``klineage gate --json`` prints."""

    schema_version: int = SCHEMA_VERSION
    verdict: Verdict
    reason: str
    fingerprint: str = Field(description="Hash of sources + flags + toolchain + target")
    workload: str
    workload_fingerprint: str
    kernel: str
    kernel_source: str
    backend: str
    platform: str
    threads: int | None
    toolchain: dict[str, str]
    seeds: list[int] = Field(default_factory=list, description="The last one was secret until now")
    stages: list[StageResult] = Field(default_factory=list)
    timing: TimingStats | None = None
    sol: SpeedOfLight | None = None
    comparison: Comparison | None = None
    build: dict[str, Any] = Field(default_factory=dict)
    gate_seconds: float = 0.0
    created_at: str = ""
    klineage_version: str = ""

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.name == name), None)
