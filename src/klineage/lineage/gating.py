"""Gating kernel states inside a run: materialize, gate (cached per fingerprint), compare, audit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from klineage.backends import Backend, backend_for
from klineage.executors import Executor, LocalExecutor
from klineage.gate import Comparison, GateOptions, GateReport, compare_kernels, run_gate
from klineage.runs import Meter, RunDir
from klineage.source import CATALOGUE, compiled_evidence, detect, feature_region, present
from klineage.workload import KernelSpec, KernelState, Workload, load_kernel

__all__ = ["StateGate", "load_state"]

ProgressFn = Callable[[str, str], None]


class StateGate:
    """The gate, bound to one workload and one run directory."""

    def __init__(self, run: RunDir, workload: Workload, options: GateOptions,
                 backend: Backend | None = None, progress: ProgressFn | None = None,
                 meter: Meter | None = None):
        self.run, self.workload, self.options = run, workload, options
        self.backend = backend
        self.meter = meter
        self.executor: Executor = LocalExecutor()
        """Charged one gate run per gate actually run (cached reports and comparisons are free)."""
        self.progress = progress or (lambda stage, detail: None)

    def spec(self, state: KernelState) -> KernelSpec:
        return state.materialize(self.run.state_dir(state.fingerprint), self.workload)

    def _backend(self, state: KernelState) -> Backend:
        return self.backend or backend_for(state.language)

    def prebuild(self, states: list[KernelState]) -> None:
        """Compile candidates in parallel before they are gated one at a time."""
        by_backend: dict[str, list[KernelState]] = {}
        for state in states:
            by_backend.setdefault(state.language, []).append(state)
        for group in by_backend.values():
            self.executor.prebuild(self._backend(group[0]), [self.spec(s) for s in group])

    def check(self, state: KernelState, profile: bool = False) -> GateReport:
        """Compile + correctness (+ profile); the report is kept next to the state's source."""
        # The same source may be gated against several workloads (admission): key by both.
        name = f"gate-{self.workload.name}{'-profile' if profile else ''}.json"
        cached = self.run.state_dir(state.fingerprint) / name
        if cached.is_file():
            return GateReport.model_validate_json(cached.read_text())
        if self.meter is not None:
            self.meter.charge_gate(f"{self.workload.name}/{state.fingerprint}")
        report = run_gate(self.workload, self.spec(state), backend=self._backend(state),
                          options=replace(self.options, profile=profile), on_progress=self.progress)
        cached.write_text(report.model_dump_json(indent=1))
        return report

    def compare(self, baseline: KernelState, candidate: KernelState) -> Comparison:
        """Paired timing; ratio = time(candidate) / time(baseline)."""
        key = f"compare-{self.workload.name}-{baseline.fingerprint}.json"
        cached = self.run.state_dir(candidate.fingerprint) / key
        if cached.is_file():
            return Comparison.model_validate_json(cached.read_text())
        result = compare_kernels(self.workload, self.spec(baseline), self.spec(candidate),
                                 backend=self._backend(candidate), options=self.options,
                                 on_progress=self.progress)
        cached.write_text(result.model_dump_json(indent=1))
        return result

    def evidence(self, state: KernelState) -> dict[str, bool]:
        built = self._backend(state).build(self.spec(state))
        if not built.ok or built.artifact is None:
            return {}
        return compiled_evidence(Path(built.artifact), state.language)

    def audit(self, before: KernelState, after: KernelState, feature: str) -> tuple[str | None, list[str]]:
        """(problem, nested): problem is None when exactly ``feature`` went away, in source and in
        compiled output. Features whose every site lay inside the removed feature's sites go with
        it (a vector path's unrolled loop, an MMA's fragment loads) and are listed as nested."""
        had, has = present(before.source, before.language), present(after.source, after.language)
        if feature in has:
            return f"{feature} is still detected in the source", []
        lost = had - has - {feature}
        nested = sorted(f for f in lost if _inside(before, f, feature))
        stray = sorted(lost - set(nested))
        if stray:
            return f"removing {feature} also removed {', '.join(stray)} from the source", nested
        gained = sorted(has - had)
        if gained:
            return f"removing {feature} introduced {', '.join(gained)}", nested
        old, new = self.evidence(before), self.evidence(after)
        if old.get(feature) and new.get(feature) and CATALOGUE[feature].compiled_signature:
            return (f"the compiled output still shows {feature} "
                    f"({CATALOGUE[feature].compiled_signature}): the compiler re-created it"), nested
        gone = (had - {feature}) - set(nested)
        vanished = sorted(f for f in gone if old.get(f) and not new.get(f))
        if vanished:
            return (f"removing {feature} also removed {', '.join(vanished)} from the compiled "
                    f"output"), nested
        return None, nested


def _inside(state: KernelState, inner: str, outer: str) -> bool:
    """Every site of ``inner`` lies within the code a removal of ``outer`` takes away (for a
    fast-path feature: the whole fast path, so a register tile of the vector kernel goes with it)."""
    spans = feature_region(state.source, state.language, outer)
    return all(any(lo <= h.site.start_byte and h.site.end_byte <= hi for lo, hi in spans)
               for h in detect(state.source, state.language) if h.feature == inner)


def load_state(folder: Path, workload: Workload) -> KernelState:
    """A state written by ``KernelState.materialize`` (resume reads them back)."""
    return KernelState.from_spec(load_kernel(workload, folder))
