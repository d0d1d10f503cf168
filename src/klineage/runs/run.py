"""One run: its folder, its typed record (``run.json``), the meter every charge goes through,
the event log, progress, and the gate sessions its stages share.

``run.json`` says what the run is — its kind, workload (folder and fingerprint), sizing, brain,
library and budget — so ``--resume`` can refuse to continue a run another way than it was
started: another kind of run, another workload, other sizes, another brain or library. Each
refusal is one error line and nothing is written. Only the budget may change on resume, and
only when given: the change is an event and the new budget is recorded.

Each stage declares its own record (``MineMeta`` in ``mine/``, ``OptimizeMeta`` in
``optimize/``, ...) as a subclass of ``RunMeta`` with a ``kind`` literal, like events.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import ConfigDict, Field, ValidationError

from klineage.errors import BrainError, ConfigError, GateWaiting, MachineLoadedError, RunStopped, WorkerError
from klineage.runs.budget import Budget, Charge, Meter
from klineage.runs.events import Event, RunInterrupted, RunStarted, Tagged, now
from klineage.runs.rundir import RunDir, new_run_id, write_atomic

if TYPE_CHECKING:
    from klineage.gate import GateOptions
    from klineage.gate.session import GateSession
    from klineage.workload import Workload

__all__ = ["BudgetChanged", "Run", "RunMeta", "check_resume", "read_meta", "resume_command"]

M = TypeVar("M", bound="RunMeta")
E = TypeVar("E", bound=Event)
KEPT_AT = ". The run is kept at "
SayFn = Callable[[str], None]


class RunMeta(Tagged):
    """``run.json``: what a run is. Subclasses add what their stage needs to resume."""

    model_config = ConfigDict(extra="forbid")
    TAG: ClassVar[str] = "kind"
    KINDS: ClassVar[dict[str, type[Tagged]]] = {}

    schema_version: int = 1
    kind: str
    """The literal of each subclass: mine, optimize, bench, demo."""
    name: str
    created_at: str = Field(default_factory=now)
    workload: str | None = None
    """The workload folder (None: a run over many, like bench or demo)."""
    workload_fingerprint: str | None = None
    sizing: Literal["full", "quick"] = "full"
    brain: str | None = None
    library: str | None = None
    budget: Budget = Field(default_factory=Budget)
    gate: dict[str, Any] | None = None
    """The gate options' sizing (``GateOptions.sizing``): a resume with others is refused (a
    run gated half with one backend or thread count and half with another compares nothing)."""

    @classmethod
    def about(cls, workload: Workload) -> dict[str, Any]:
        """The fields that bind a run to one workload at one sizing."""
        return {"name": workload.name, "workload": str(workload.root),
                "workload_fingerprint": workload.fingerprint(),
                "sizing": "quick" if workload.quick else "full"}


class BudgetChanged(Event):
    """A resumed run was given a new budget."""

    event: Literal["budget_changed"] = "budget_changed"
    old: str
    new: str


class Run(RunDir):
    """A run folder in use: its record, meter and gate sessions."""

    def __init__(self, path: Path, meta: RunMeta, budget: Budget, say: SayFn | None = None):
        super().__init__(path)
        self.record = meta
        self.say: SayFn = say or (lambda _: None)
        self.meter = Meter.resume(budget, self.events(Charge), log=self.log)
        self._gates: dict[str, GateSession] = {}
        self._ctrl_c = False

    @classmethod
    def create(cls, root: Path, meta: RunMeta, say: SayFn | None = None) -> Run:
        """A new run folder. Create it last, once everything the run needs has been set up, so a
        start that fails leaves no folder behind."""
        path = Path(root) / new_run_id(meta.kind, meta.name)
        (path / "states").mkdir(parents=True)
        write_atomic(path / "run.json", meta.model_dump_json(indent=2))
        RunDir(path).log(RunStarted(kind=meta.kind, name=meta.name))
        return cls(path, meta, meta.budget, say)

    @classmethod
    def resume(cls, path: Path, meta: RunMeta, budget: Budget | None = None,
               say: SayFn | None = None) -> Run:
        """Reopen a run whose record ``check_resume`` accepted; ``budget`` is what the user gave
        (None: the recorded one holds; another is logged and recorded)."""
        run = cls(Path(path), meta, budget or meta.budget, say)
        if budget is not None and budget != meta.budget:
            run.log(BudgetChanged(old=meta.budget.describe(), new=budget.describe()))
            run.update_record(budget=budget)
        return run

    def gate(self, workload: Workload, options: GateOptions,
             progress: Callable[[str, str], None] | None = None) -> GateSession:
        """The gate session for a workload at these options, shared by every stage of the run
        (its reports are cached in the state folders, charged to the run's meter)."""
        from klineage.gate.session import GateSession

        session = GateSession(self, workload, options, meter=self.meter,
                              progress=progress or (lambda stage, detail: self.say(f"{stage}: {detail}")))
        return self._gates.setdefault(session.key, session)

    def log(self, event: E) -> E:
        # A Ctrl-C whose KeyboardInterrupt was swallowed where exceptions are ignored (an at-fork
        # hook of a subprocess start, measured: 1 stop in 4 was lost) stops the run at its next
        # event instead: every charge and step is one (only the main thread raises it, as Python).
        if self._ctrl_c and threading.current_thread() is threading.main_thread():
            self._ctrl_c = False
            raise KeyboardInterrupt
        return super().log(event)

    def update_record(self, **changes: Any) -> None:
        self.record = self.record.model_copy(update=changes)
        write_atomic(self.path / "run.json", self.record.model_dump_json(indent=2))

    @contextmanager
    def stoppable(self, resume_command: str) -> Iterator[None]:
        """Ctrl-C, a brain that cannot go on, a machine too loaded to time on, or gate jobs left
        waiting in a spool (``--no-wait``) stops the run where it is: the stop is logged and the
        error says where the run is and how to continue."""
        with self._noting_ctrl_c():
            try:
                yield
            except KeyboardInterrupt:
                self._ctrl_c = False
                self.log(RunInterrupted(reason="interrupted (Ctrl-C)"))
                raise RunStopped(f"interrupted{KEPT_AT}{self.path}: continue it with {resume_command}",
                                 interrupted=True) from None
            except (BrainError, MachineLoadedError, WorkerError) as exc:
                # A child run's stop names the child's resume: the command that works is ours.
                cause = str(exc).split(KEPT_AT)[0].rstrip(".")
                self.log(RunInterrupted(reason=cause))
                raise type(exc)(f"{cause}{KEPT_AT}{self.path}: continue it with {resume_command}") from exc
            except GateWaiting as exc:  # --no-wait: the results come back to a resume
                cause = str(exc).split(KEPT_AT)[0].rstrip(".")
                self.log(RunInterrupted(reason=cause, waiting=exc.jobs, flags=exc.flags))
                raise GateWaiting(f"{cause}{KEPT_AT}{self.path}: then continue it with "
                                  f"{resume_command} {exc.flags}", exc.jobs, exc.flags) from None

    @contextmanager
    def _noting_ctrl_c(self) -> Iterator[None]:
        """SIGINT raises KeyboardInterrupt as usual and also notes it, for ``log`` to act on."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_ctrl_c(signum: int, frame: Any) -> None:
            self._ctrl_c = True
            # Raised inside logging's at-fork lock hooks (a subprocess starting), it is printed
            # as "Exception ignored" with a traceback and lost; noted, the next event raises it.
            if frame is None or frame.f_globals.get("__name__") != "logging":
                raise KeyboardInterrupt

        previous = signal.signal(signal.SIGINT, on_ctrl_c)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def resume_command(kind: str, path: Path, workload: str | None = None, quick: bool = False,
                   gate: dict[str, Any] | None = None) -> str:
    """The command that continues the stopped run at ``path`` (a mine or optimize run names its
    workload, with ``--quick`` where it was started so, and the gate options the command line
    sets, ``--backend`` and ``--threads``, or its resume is refused)."""
    flags = "".join(f" --{name} {(gate or {})[name]}" for name in ("backend", "threads")
                    if (gate or {}).get(name) is not None)
    if kind in ("mine", "optimize"):
        return f"klineage {kind} {workload}{' --quick' if quick else ''} --resume {path}{flags}"
    return f"klineage {kind} --resume {path}{flags}"


def check_resume(path: Path, expected: type[M], workload: Workload | None = None, *,
                 brain: str | None = None, library: Path | None = None,
                 finished: type[Event] | None = None, gate: GateOptions | None = None) -> M:
    """The record of the run at ``path``, if it can be continued this way: as this kind of run,
    on the same workload at the same sizing, with the same brain and library (``brain`` and
    ``library``: what the user gave, None when not given), and, where ``finished`` is given, not
    finished: a finished run's results are never measured again or overwritten. Reads only: a
    refusal writes nothing."""
    meta = read_meta(path, expected)
    if workload is not None:
        _check_workload(path, meta, workload)
    if brain is not None and meta.brain is not None and brain != meta.brain:
        raise ConfigError(f"{path}: this run was started with --brain {meta.brain}, not {brain}; "
                          f"resume it with the same brain (or start a new run)")
    if library is not None and (meta.library is None
                                or Path(library).resolve() != Path(meta.library).resolve()):
        raise ConfigError(f"{path}: this run was started with --library {meta.library}, not "
                          f"{library}; resume it without --library (it uses its own)")
    if gate is not None and meta.gate is not None and gate.sizing() != meta.gate:
        other = sorted(k for k in {*meta.gate, *gate.sizing()}
                       if meta.gate.get(k) != gate.sizing().get(k))
        same = resume_command(meta.kind, path, meta.workload, meta.sizing == "quick", meta.gate)
        how = (f"resume it with the same ones: {same}" if set(other) <= {"backend", "threads"}
               else "resume it the way it was started (these are no command-line flags: a script, "
                    "or the demo, set them)")
        raise ConfigError(f"{path}: this run was started with other gate options ("
                          + ", ".join(f"{k}: {meta.gate.get(k)!r}, now {gate.sizing().get(k)!r}"
                                      for k in other) + f"); {how}")
    if finished is not None and RunDir.open(path).events(finished):
        raise ConfigError(f"{path}: this {meta.kind} run is finished, and its results stay as they "
                          f"are (klineage report {path} shows them); start a new run to measure again")
    return meta


def read_meta(path: Path, expected: type[M]) -> M:
    """``run.json`` of the run at ``path``, as the kind of run a command can continue."""
    raw = RunDir.open(path).meta
    kind = raw.get("kind")
    if kind != expected.tag():
        command = resume_command(str(kind), path, raw.get("workload"), raw.get("sizing") == "quick",
                                 raw.get("gate"))
        hint = f"; continue it with {command}" if kind in ("mine", "optimize") else ""
        raise ConfigError(f"{path} is {_a(str(kind))} run, not {_a(expected.tag())} run{hint}")
    try:
        return expected.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}/run.json does not describe a {kind} run this klineage can "
                          f"continue ({exc.error_count()} problems, first: "
                          f"{exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}); start a new run") from None


def _a(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _check_workload(path: Path, meta: RunMeta, workload: Workload) -> None:
    sizing = "quick" if workload.quick else "full"
    if meta.sizing != sizing:
        flag = "with" if meta.sizing == "quick" else "without"
        raise ConfigError(f"{path}: this run was started {flag} --quick; resume it the same way")
    if meta.workload_fingerprint != workload.fingerprint():
        raise ConfigError(f"{path}: this run is on workload {meta.name} ({meta.workload}), not "
                          f"{workload.name} ({workload.root}), or that workload has changed since "
                          f"(fingerprint {meta.workload_fingerprint}, now {workload.fingerprint()})")
