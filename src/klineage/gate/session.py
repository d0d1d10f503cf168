"""The gate as a run sees it: kernel states materialized in the run folder, gated once each.

Five stages (mine's walk and re-derivation, admission, optimize, bench) gate kernel states
through one ``GateSession`` per (run, workload). Reports and comparisons are kept next to the
state's source, keyed by the workload's fingerprint and the gate's sizing, so a resumed run
never gates the same thing twice and never reuses a report made for another size or workload.
A time or comparison the gate found unmeasurable (a loaded machine) is not a result: it is not
cached and stops the run (``MachineLoadedError``), which can be resumed on a quiet machine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from klineage.backends import Backend
from klineage.errors import MachineLoadedError
from klineage.executors import Executor, LocalExecutor
from klineage.gate.report import Comparison, GateReport, Verdict
from klineage.gate.runner import GateOptions, compare_kernels, describe_comparison, run_gate
from klineage.runs import Meter, RunDir
from klineage.workload import KernelSpec, KernelState, Workload

__all__ = ["GateSession"]

ProgressFn = Callable[[str, str], None]


class GateSession:
    """The gate, bound to one workload and one run directory."""

    def __init__(self, run: RunDir, workload: Workload, options: GateOptions,
                 backend: Backend | None = None, progress: ProgressFn | None = None,
                 meter: Meter | None = None):
        self.run, self.workload, self.options = run, workload, options
        self.backend = backend
        self.meter = meter
        """Charged one gate run per gate actually run (cached reports and comparisons are free)."""
        self.executor: Executor = LocalExecutor()
        self.progress = progress or (lambda stage, detail: None)
        sizing = {k: v for k, v in asdict(replace(options, profile=False)).items()
                  if k != "secret_seed"}
        self.key = hashlib.sha256(json.dumps([workload.fingerprint(), sizing], sort_keys=True,
                                              default=str).encode()).hexdigest()[:12]

    def spec(self, state: KernelState) -> KernelSpec:
        return state.materialize(self.run.state_dir(state.fingerprint), self.workload)

    def backend_for(self, state: KernelState) -> Backend:
        return self.backend or self.options.backend_for(state.language)

    def prebuild(self, states: list[KernelState]) -> None:
        """Compile candidates in parallel before they are gated one at a time."""
        by_backend: dict[str, list[KernelState]] = {}
        for state in states:
            by_backend.setdefault(state.language, []).append(state)
        for group in by_backend.values():
            self.executor.prebuild(self.backend_for(group[0]), [self.spec(s) for s in group])

    def check(self, state: KernelState, profile: bool = False) -> GateReport:
        """Compile + correctness (+ profile); the report is kept next to the state's source."""
        # The same source may be gated against several workloads (admission): key by both.
        name = f"gate-{self.workload.name}-{self.key}{'-profile' if profile else ''}.json"
        cached = self.run.state_dir(state.fingerprint) / name
        if cached.is_file():
            return GateReport.model_validate_json(cached.read_text())
        if self.meter is not None:
            self.meter.charge_gate(f"{self.workload.name}/{state.fingerprint}")
        report = run_gate(self.workload, self.spec(state), backend=self.backend_for(state),
                          options=replace(self.options, profile=profile), on_progress=self.progress)
        if report.verdict is Verdict.UNMEASURABLE:  # never cached, never a result of the run
            raise MachineLoadedError(f"{self.workload.name}/{state.fingerprint[:8]}: {report.reason}")
        cached.write_text(report.model_dump_json(indent=1))
        return report

    def compare(self, baseline: KernelState, candidate: KernelState) -> Comparison:
        """Paired timing; ratio = time(candidate) / time(baseline)."""
        key = f"compare-{self.workload.name}-{self.key}-{baseline.fingerprint}.json"
        cached = self.run.state_dir(candidate.fingerprint) / key
        if cached.is_file():
            return Comparison.model_validate_json(cached.read_text())
        result = compare_kernels(self.workload, self.spec(baseline), self.spec(candidate),
                                 backend=self.backend_for(candidate), options=self.options,
                                 on_progress=self.progress)
        if result.decision == "unmeasurable":
            raise MachineLoadedError(f"{self.workload.name}: {baseline.fingerprint[:8]} vs "
                                     f"{candidate.fingerprint[:8]}: {describe_comparison(result)}")
        cached.write_text(result.model_dump_json(indent=1))
        return result

    def artifact(self, state: KernelState) -> Path | None:
        """The state's built artifact (from the build cache), or None if it does not build."""
        built = self.backend_for(state).build(self.spec(state))
        return Path(built.artifact) if built.ok and built.artifact is not None else None
