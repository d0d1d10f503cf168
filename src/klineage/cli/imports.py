"""``klineage import``: other benchmarks' problem files as klineage workloads (registered by the
root app).

    klineage import kernelbench level1/ my_problem.py --out workloads/kernelbench
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from klineage.cli._common import JsonOpt, console, err_console, new_app, parse_memory, user_errors

__all__ = ["import_app"]

import_app = new_app("import", "Turn other benchmarks' problem files into klineage workloads.")


@import_app.command("kernelbench")
def kernelbench_command(
    paths: Annotated[list[Path], typer.Argument(
        help="KernelBench problem files (class Model, get_inputs, get_init_inputs), or folders of them.")],
    out: Annotated[Path, typer.Option(help="Folder to write one workload folder per problem into.")],
    timeout: Annotated[float, typer.Option(
        min=1, help="Seconds one problem's survey (it runs the problem's code) may take.")] = 300.0,
    memory: Annotated[str, typer.Option(
        help="Address-space cap of each problem's process (a size that does not fit fails there).")]
        = "8G",
    force: Annotated[bool, typer.Option("--force", help="Replace workload folders that exist.")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Import KernelBench problems as workloads `klineage gate` can run (docs/workloads.md)."""
    from klineage.workload.kernelbench import import_kernelbench

    columns = (TextColumn("importing"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn(), TextColumn("{task.description}"))
    with user_errors(), Progress(*columns, console=err_console, disable=as_json) as progress:
        task = progress.add_task("", total=None)

        def show(problem: Path, done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, description=escape(problem.name))

        outcomes = import_kernelbench(paths, out, timeout_s=timeout, memory_bytes=parse_memory(memory),
                                      force=force, on_problem=show)
        progress.update(task, completed=len(outcomes), description="")
    if as_json:
        print(json.dumps([o.model_dump(mode="json") for o in outcomes], indent=2))
    else:
        _render(outcomes)
    if any(not o.ok for o in outcomes):
        raise typer.Exit(1)


def _render(outcomes: list) -> None:
    table = Table(title=f"imported {sum(o.ok for o in outcomes)} of {len(outcomes)} problems")
    for column in ("problem", "workload", "axes", "params", "weights", "check shapes"):
        table.add_column(column)
    for o in outcomes:
        if not o.ok:
            continue
        table.add_row(Path(o.problem).name, o.workload,
                      " ".join(f"{k}={v}" for k, v in o.axes.items()),
                      " ".join(f"{k}={v:g}" for k, v in o.params.items()) or "-",
                      " ".join(o.weights) or "-", str(o.check_shapes))
    if any(o.ok for o in outcomes):
        console.print(table)
    for o in outcomes:
        for note in o.notes:
            console.print(f"{Path(o.problem).name}: {escape(note)}", highlight=False, soft_wrap=True)
    for o in outcomes:
        if not o.ok:
            console.print(Text.assemble((f"{Path(o.problem).name}: ", "bold"), ("failed", "red"),
                                        f" — {o.error}"), highlight=False, soft_wrap=True)
