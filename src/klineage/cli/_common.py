"""What every typer app of klineage shares: consoles, the --json option, app settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from klineage.errors import KlineageError

__all__ = ["BackendOpt", "JsonOpt", "QuickOpt", "RunsOpt", "ThreadsOpt", "console", "err_console",
           "new_app", "user_errors"]

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


def new_app(name: str, help: str) -> typer.Typer:
    """A typer app that shows help when called bare and never prints tracebacks with locals."""
    return typer.Typer(name=name, help=help, no_args_is_help=True, pretty_exceptions_enable=False,
                       add_completion=False)


@contextmanager
def user_errors() -> Iterator[None]:
    """A klineage error becomes one red line and exit status 2, as under the root command."""
    try:
        yield
    except KlineageError as exc:
        # soft_wrap: a long message stays one line however narrow the terminal is.
        err_console.print(Text.assemble(("error: ", "bold red"), str(exc)), highlight=False,
                          soft_wrap=True)
        raise typer.Exit(2) from None
