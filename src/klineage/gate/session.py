"""The gate as a run sees it: kernel states materialized in the run folder, gated once each.

Five stages (mine's walk and re-derivation, admission, optimize, bench) gate kernel states
through one ``GateSession`` per (run, workload). Reports and comparisons are kept per state in
the run's ``gates/`` (``RunDir.gate_dir``, apart from the kernel folder, whose every file is
built), keyed by the workload's fingerprint and the gate's sizing, so a resumed run never gates
the same thing twice and never reuses a report made for another size or workload.
A time or comparison the gate found unmeasurable (a loaded machine) is not a result: it is not
cached: the run waits for a quieter machine and times again for as long as the options'
``patience_s`` allows, then stops (``MachineLoadedError``) and can be resumed.

Gate runs and comparisons are jobs of the command's executor (``executors.current()``): on Ray
they run in a timing actor, here they run in this process. Either way the report comes back here,
where it is cached and charged, once per finished job.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from klineage.backends import Backend
from klineage.errors import MachineLoadedError
from klineage.executors import current
from klineage.gate._load import wait_until_quiet
from klineage.gate._noise import quiet_limit
from klineage.gate.report import Comparison, GateReport, Verdict
from klineage.gate.runner import GateOptions, compare_kernels, describe_comparison, run_gate
from klineage.runs import Meter, RunDir
from klineage.workload import KernelSpec, KernelState, Workload

__all__ = ["PATIENCE_S", "GateSession", "GateTask", "device_of", "gate_ahead", "patiently", "run_task"]

ProgressFn = Callable[[str, str], None]

PATIENCE_S = 600.0
"""The long runs' default patience (demo, mine, optimize, bench, memory): how long a timing the
load made unmeasurable waits for a quieter machine before the run stops (resumable, exit 75).
Ten minutes outlasts a neighbour's build or test run; a run left overnight on a shared machine
still stops rather than spin."""


def patiently(again: Callable[[], Any], result: Any, unmeasurable: Callable[[Any], bool],
              limit: float, patience_s: float, say: Callable[[str], None]) -> Any:
    """``result``, or while it is ``unmeasurable`` and ``patience_s`` lasts, ``again()`` once
    others use at most ``limit`` cores (``wait_until_quiet``)."""
    deadline = time.monotonic() + patience_s
    while unmeasurable(result) and wait_until_quiet(limit, deadline, say):
        result = again()
    return result


@dataclass(frozen=True)
class GateTask:
    """One gate run or paired comparison, as a job an executor can ship."""

    workload: Workload
    kernel: KernelSpec
    backend: Backend
    options: GateOptions
    against: KernelSpec | None = None
    """The baseline the kernel must beat (``run_gate``'s ``against``)."""
    compare_only: bool = False
    """Only the paired comparison with ``against`` (``compare_kernels``), no gate."""
    progress: ProgressFn | None = None
    """Only for jobs run in this process (a remote worker's progress is not shown)."""
    origin: str = ""
    """Who asked (a run's folder and gate session): a spool answers the same job of the same
    origin once, so a resumed run finds its results, and another run (a bench's next repeat)
    measures anew. Empty: any identical job (``klineage gate`` run again takes its result up)."""


def run_task(task: GateTask) -> GateReport | Comparison:
    """The job every executor runs: the same ``run_gate`` / ``compare_kernels`` as ever."""
    if task.compare_only and task.against is not None:
        return compare_kernels(task.workload, task.against, task.kernel, backend=task.backend,
                               options=task.options, on_progress=task.progress)
    return run_gate(task.workload, task.kernel, backend=task.backend, options=task.options,
                    against=task.against, on_progress=task.progress)


def device_of(backend: Backend) -> str:
    """The kind of timing slot a backend's runs need."""
    return "cpu" if backend.device_key().startswith(("cpu", "null")) else "cuda"


class GateSession:
    """The gate, bound to one workload and one run directory."""

    def __init__(self, run: RunDir, workload: Workload, options: GateOptions,
                 backend: Backend | None = None, progress: ProgressFn | None = None,
                 meter: Meter | None = None):
        self.run, self.workload, self.options = run, workload, options
        self.backend = backend
        self.meter = meter
        """Charged one gate run per gate actually run (cached reports and comparisons are free)."""
        self.progress = progress or (lambda stage, detail: None)
        self.key = hashlib.sha256(json.dumps([workload.fingerprint(), options.sizing()], sort_keys=True,
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
            current().prebuild(self.backend_for(group[0]), [self.spec(s) for s in group])

    def gate_ahead(self, states: list[KernelState], profile: bool = False) -> None:
        """Build candidates that will be gated one after another, and gate the first few side by
        side now where the executor has several timing slots (``gate_ahead``)."""
        self.prebuild(states)
        gate_ahead([(self, state) for state in states], profile)

    def check(self, state: KernelState, profile: bool = False) -> GateReport:
        """Compile + correctness (+ profile); the report is kept next to the state's source."""
        return next(self.check_many([state], profile))[1]

    def check_many(self, states: list[KernelState],
                   profile: bool = False) -> Iterator[tuple[KernelState, GateReport]]:
        """``check`` of several states, run side by side on the executor's timing slots; each
        ``(state, report)`` as it finishes (cached ones first)."""
        todo = []
        for state in states:
            cached = self._report_file(state, profile)
            if not cached.is_file():
                todo.append(state)
                continue
            marker = _ahead_marker(cached)
            if marker.exists():  # gated ahead: its turn has come
                self._charge(state)
                marker.unlink()
            yield state, GateReport.model_validate_json(cached.read_text())
        tasks = [self._task(state, replace(self.options, profile=profile)) for state in todo]
        for index, report in self._jobs(tasks):
            yield todo[index], self._keep(todo[index], profile, report, ahead=False)

    def _keep(self, state: KernelState, profile: bool, report: GateReport, ahead: bool) -> GateReport:
        """Cache a finished gate run's report (timed again, patiently, where the load made it
        unmeasurable), charged now or (gated ahead) when it is taken; returns what was kept.
        The marker goes first and the charge last: a run killed between them finds a report
        still marked on resume and charges it then, once (charged first, a kill before the
        report was written charged the gate again on resume)."""
        cached = self._report_file(state, profile)
        marker = _ahead_marker(cached)
        marker.touch()  # a report with a marker is one not charged yet
        if report.verdict is Verdict.UNMEASURABLE:  # never cached, never a result of the run
            task = self._task(state, replace(self.options, profile=profile))
            report = self._patiently(task, report, lambda r: r.verdict is Verdict.UNMEASURABLE)
            if report.verdict is Verdict.UNMEASURABLE:
                raise MachineLoadedError(f"{self.workload.name}/{state.fingerprint[:8]}: {report.reason}")
        cached.write_text(report.model_dump_json(indent=1))
        if not ahead:
            self._charge(state)
            marker.unlink()
        return report

    def _patiently(self, task: GateTask, result: Any, unmeasurable: Callable[[Any], bool]) -> Any:
        """``patiently`` for one task of this run. Retries are not charged: the load is no
        method's doing."""
        limit = quiet_limit(self.options.threads or task.backend.default_threads(task.kernel))
        return patiently(lambda: dict(self._jobs([task]))[0], result, unmeasurable, limit,
                         self.options.patience_s, lambda line: self.progress("waiting", line))

    def _charge(self, state: KernelState) -> None:
        if self.meter is not None:
            self.meter.charge_gate(f"{self.workload.name}/{state.fingerprint}")

    def _report_file(self, state: KernelState, profile: bool) -> Path:
        # The same source may be gated against several workloads (admission): key by both.
        name = f"gate-{self.workload.name}-{self.key}{'-profile' if profile else ''}.json"
        return self._kept(state, name)

    def _kept(self, state: KernelState, name: str) -> Path:
        """Where the gate's record ``name`` of a state is kept: ``gates/<fp>/``, or, in a run made
        before reports moved there, beside the source where that run kept it (resumed, such a
        run would gate and charge every state again)."""
        earlier = self.run.state_dir(state.fingerprint) / name
        if earlier.is_file():
            return earlier
        folder = self.run.gate_dir(state.fingerprint)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / name

    def _task(self, state: KernelState, options: GateOptions,
              baseline: KernelState | None = None) -> GateTask:
        backend = self.backend_for(state)
        here = not current().remote(device_of(backend))  # a remote job's progress is not shown
        return GateTask(self.workload, self.spec(state), backend, options,
                        against=self.spec(baseline) if baseline is not None else None,
                        compare_only=baseline is not None, progress=self.progress if here else None,
                        origin=f"{self.run.path.name}/{self.key}")

    def _jobs(self, tasks: list[GateTask]) -> Iterator[tuple[int, Any]]:
        if not tasks:
            return iter(())
        return current().map(run_task, tasks, device_of(tasks[0].backend))

    def compare_ahead(self, baseline: KernelState, candidate: KernelState) -> None:
        """The comparison a candidate needs if it passes, placed beside its gate run where the
        executor queues work elsewhere (``Executor.ahead``: a spool's worker runs both in one
        round, not two; the comparison runs even if the gate then refuses the candidate)."""
        if not self._compare_file(baseline, candidate).is_file():
            task = self._task(candidate, self.options, baseline)
            current().ahead(run_task, [task], device_of(task.backend))

    def _compare_file(self, baseline: KernelState, candidate: KernelState) -> Path:
        return self._kept(candidate, f"compare-{self.workload.name}-{self.key}-{baseline.fingerprint}.json")

    def compare(self, baseline: KernelState, candidate: KernelState) -> Comparison:
        """Paired timing; ratio = time(candidate) / time(baseline)."""
        cached = self._compare_file(baseline, candidate)
        if cached.is_file():
            return Comparison.model_validate_json(cached.read_text())
        task = self._task(candidate, self.options, baseline)
        [(_, result)] = self._jobs([task])
        result = self._patiently(task, result, lambda r: r.decision == "unmeasurable")
        if result.decision == "unmeasurable":
            raise MachineLoadedError(f"{self.workload.name}: {baseline.fingerprint[:8]} vs "
                                     f"{candidate.fingerprint[:8]}: {describe_comparison(result)}: "
                                     f"{result.reason}")
        cached.write_text(result.model_dump_json(indent=1))
        return result

    def artifact(self, state: KernelState) -> Path | None:
        """The state's built artifact (from the build cache), or None if it does not build."""
        built = self.backend_for(state).build(self.spec(state))
        return Path(built.artifact) if built.ok and built.artifact is not None else None


def gate_ahead(candidates: list[tuple[GateSession, KernelState]], profile: bool = False) -> None:
    """Where the executor has several timing slots, gate the first few candidates (of one
    session, or of several: admission tries one card on several workloads) side by side now, no
    more than the budget's gate runs left. Each is charged when its turn comes (its ``check``
    reads the report), so a run decides and spends exactly what it would one at a time, and a
    candidate never taken is never charged. One slot: nothing is gated ahead."""
    todo = [(session, state) for session, state in candidates
            if not session._report_file(state, profile).is_file()]
    if not todo:
        return
    first = todo[0][0]
    room = current().slots(device_of(first.backend_for(todo[0][1])))
    if first.meter is not None and first.meter.budget.gate_runs is not None:
        room = min(room, first.meter.budget.gate_runs - first.meter.spent.gate_runs)
    if room < 2:
        return
    todo = todo[:room]
    tasks = [session._task(state, replace(session.options, profile=profile)) for session, state in todo]
    for index, report in current().map(run_task, tasks, device_of(tasks[0].backend)):
        session, state = todo[index]
        session._keep(state, profile, report, ahead=True)


def _ahead_marker(report: Path) -> Path:
    """Beside a report not charged yet: gated ahead of its turn, or kept by a run killed before
    it charged it."""
    return report.with_name(report.name + ".ahead")
