"""``klineage memory build``: the memory baseline's own forward runs (registered by the root app).

    klineage memory build --like runs/<mine-run> --like runs/<mine-run> --out memory
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from klineage.cli._brains import BrainOpt, ConfigOpt, RecordOpt, ReplayOpt, brain_settings
from klineage.cli._common import (
    BackendOpt,
    JsonOpt,
    PatienceOpt,
    RunsOpt,
    ThreadsOpt,
    console,
    new_app,
    run_gate_options,
    user_errors,
)

__all__ = ["memory_app"]

memory_app = new_app("memory", "Build the memory baseline's store from its own forward runs.")

MemoryOpt = Annotated[Path | None, typer.Option(
    help="The memory baseline's store (a folder with memory.json from `klineage memory build`).")]


@memory_app.command("build")
def build_command(
    like: Annotated[list[Path], typer.Option(
        help="A finished mine run: its workload is a training workload, and the memory's run on it "
             "gets the budget the mine spent (gate runs and calls). Repeat for each.")],
    out: Annotated[Path, typer.Option(help="Folder to write memory.json into.")] = Path("memory"),
    start: Annotated[str, typer.Option(help="The kernel variant each forward run starts from.")]
        = "naive",
    brain: BrainOpt = None,
    config: ConfigOpt = None,
    record: RecordOpt = None,
    replay: ReplayOpt = None,
    runs: RunsOpt = Path("runs"),
    threads: ThreadsOpt = None,
    backend: BackendOpt = None,
    patience: PatienceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Optimize each training workload's naive kernel with no cards (method none), with the
    budget its mine run spent, and keep every candidate's outcome as free-text memory."""
    from klineage.optimize import OptimizeOptions
    from klineage.optimize.memory import build_memory, mine_spent

    with user_errors():
        training = [mine_spent(path) for path in like]
        options = OptimizeOptions(**brain_settings(brain, None, config, record, replay),
                                  gate=run_gate_options(threads, backend, patience))
        with console.status("", spinner="dots") as status:
            store = build_memory(training, options, runs, out, start=start,
                                 say=None if as_json else (lambda line: status.update(escape(line))))
    if as_json:
        print(store.model_dump_json(indent=2))
        return
    kept = sum(o.verdict == "accepted" for o in store.observations)
    console.print(f"memory of {len(store.observations)} candidates ({kept} kept) on "
                  f"{', '.join(store.workloads)}: {out / 'memory.json'}")
    console.print(json.dumps(store.budgets))
