"""What every typer app of klineage shares: consoles, the --json option, app settings."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from klineage.errors import ConfigError, GateWaiting, KlineageError, MachineLoadedError, RunStopped

if TYPE_CHECKING:
    from klineage.executors import Executor
    from klineage.gate import GateOptions
    from klineage.workload import Workload

__all__ = ["BackendOpt", "ExecutorOpt", "JsonOpt", "NoWaitOpt", "PatienceOpt", "PlainProgress", "QuickOpt",
           "RunsOpt", "ThreadsOpt", "console", "err_console", "executing", "exit_status", "new_app",
           "parse_memory", "run_gate_options", "stop_line", "user_errors", "workload_at"]

console = Console()
err_console = Console(stderr=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
QuickOpt = Annotated[bool, typer.Option(
    "--quick", help="Benchmark at the workloads' smaller quick_axes sizes (smoke runs, the demo).")]
RunsOpt = Annotated[Path, typer.Option(help="Where run folders go.")]
ThreadsOpt = Annotated[int | None, typer.Option(min=1, help="CPU threads to time with.")]
BackendOpt = Annotated[str | None, typer.Option(
    help="Build and run every kernel with this backend instead of its language's (null: no "
         "compiler, a modeled time per feature; for trying the pipeline, proves nothing).")]

PatienceOpt = Annotated[float | None, typer.Option(
    min=0, metavar="SECONDS", show_default=False,
    help="How long a timing the machine's load made unmeasurable waits for a quieter moment and "
         "is timed again (not charged) before the run stops, resumable, with exit status 75. "
         "Default: 600; 0 stops at once.")]


def run_gate_options(threads: int | None, backend: str | None, patience: float | None) -> GateOptions:
    """The gate options of a long run (mine, optimize, bench, memory): 5 trials, 2 s of pairs,
    ``PATIENCE_S`` of patience unless ``patience`` says otherwise."""
    from klineage.gate import GateOptions
    from klineage.gate.session import PATIENCE_S

    return GateOptions(threads=threads, trials=5, compare_s=2.0, backend=backend,
                       patience_s=PATIENCE_S if patience is None else patience)


ExecutorOpt = Annotated[str, typer.Option(
    "--executor", metavar="local|ray[:ADDRESS]|spool:DIR",
    help="Where gate work runs: local (this machine), a Ray cluster (ray:HOST:PORT of its head; "
         "plain ray: RAY_ADDRESS, else a new local one), or spool:DIR, a folder that `klineage "
         "worker DIR` drains where the GPU is. See docs/scale.md.")]

NoWaitOpt = Annotated[bool, typer.Option(
    "--no-wait", help="With --executor spool:DIR: once every gate job it needs is in the spool, "
                      "stop (exit status 3) instead of waiting for a worker; resume it once they "
                      "are drained.")]


@contextmanager
def executing(text: str, wait: bool = True) -> Iterator[Executor]:
    """The command's work runs on the executor ``--executor`` named (``wait=False``: a spool's
    missing results stop it, ``GateWaiting``)."""
    from klineage.executors import executor_from, using

    def waiting(line: str) -> None:
        err_console.print(escape(line))

    with using(executor_from(text, waiting=waiting, wait=wait)) as executor:
        yield executor


def _flags_take_no_value() -> None:
    """typer 0.29's rich help shows a type beside every option, ``<bool>`` beside flags (``--json
    <bool>``), which reads as if the flag took a value; a flag's row shows none."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "klineage_flags", False):
        return  # an older typer (no types in its help), or done already

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag and not self.count else shown(self, ctx)

    display_type_rich.klineage_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def new_app(name: str, help: str, completion: bool = False) -> typer.Typer:
    """A typer app that shows help when called bare and never prints tracebacks with locals;
    ``completion``: the root's ``--install-completion`` / ``--show-completion`` (bash, zsh, fish)."""
    _flags_take_no_value()
    return typer.Typer(name=name, help=help, no_args_is_help=True, pretty_exceptions_enable=False,
                       add_completion=completion)


@contextmanager
def user_errors(as_json: bool = False) -> Iterator[None]:
    """A klineage error becomes one red line and exit status 2, as under the root command; a
    run left waiting for a spool is one line too (and, with ``as_json``, a JSON status)."""
    try:
        yield
    except KlineageError as exc:
        if as_json and isinstance(exc, GateWaiting):
            print(json.dumps({"status": "waiting", "jobs": exc.jobs, "message": str(exc)}))
        stop_line(exc)
        raise typer.Exit(exit_status(exc)) from None


def stop_line(exc: KlineageError) -> None:
    """The one line a command ends with when it stops on a klineage error."""
    # soft_wrap: a long message stays one line however narrow the terminal is.
    label = ("waiting: ", "bold yellow") if isinstance(exc, GateWaiting) else ("error: ", "bold red")
    err_console.print(Text.assemble(label, str(exc)), highlight=False, soft_wrap=True)


def workload_at(path: Path, quick: bool) -> Workload:
    """The workload a command was pointed at; ``--quick`` on one without ``[quick_axes]`` is
    refused (it used to run at the full sizes, silently)."""
    from klineage.workload import load_workload

    loaded = load_workload(path, quick=quick)
    if quick and not loaded.quick:
        raise ConfigError(f"--quick: {path} declares no [quick_axes]; run it without --quick")
    return loaded


def parse_memory(text: str) -> int:
    """``--memory`` values: bytes from 8G, 512M, 64k or a plain number."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    try:
        scale = units.get(text[-1].lower(), 1)
        return int(float(text.rstrip("kKmMgGbB") if scale > 1 else text) * scale)
    except (ValueError, IndexError):
        raise ConfigError(f"--memory: expected a size such as 8G or 512M, got {text!r}") from None


BUSY_EXIT = 75
"""sysexits' EX_TEMPFAIL (a temporary failure: try again later), for a run stopped because the
machine stayed too busy to time on: a script can tell it from a mistake (2) and retry."""


WAITING_EXIT = 3
"""A command that stopped with gate jobs waiting in a spool (``--no-wait``): not a mistake (2) and
not a busy machine (75); a script drains the spool, then resumes."""


def exit_status(exc: KlineageError) -> int:
    """2 for an error, ``BUSY_EXIT`` for a run the load stopped, ``WAITING_EXIT`` for one left
    waiting for a spool, 130 for a run stopped by Ctrl-C (as for any interrupted program)."""
    if isinstance(exc, RunStopped) and exc.interrupted:
        return 130
    if isinstance(exc, GateWaiting):
        return WAITING_EXIT
    return BUSY_EXIT if isinstance(exc, MachineLoadedError) else 2


class PlainProgress:
    """Progress where no live display can be drawn (a pipe, nohup, CI): every stage as a line,
    and the latest progress line at most every ``every_s`` seconds, each with the time spent."""

    def __init__(self, console: Console, every_s: float = 10.0):
        self.console, self.every_s = console, every_s
        self.started = self.last = time.monotonic()

    def stage(self, name: str) -> None:
        self._print(f"== {name}")

    def line(self, text: str) -> None:
        if time.monotonic() - self.last >= self.every_s:
            self._print(text)

    def _print(self, text: str) -> None:
        self.last = time.monotonic()
        self.console.print(f"[{self.last - self.started:6.0f} s] {text}", markup=False, highlight=False,
                           soft_wrap=True)
