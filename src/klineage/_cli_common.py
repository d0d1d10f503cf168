"""What every typer app of klineage shares: consoles, the --json option, app settings."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

__all__ = ["JsonOpt", "QuickOpt", "console", "err_console", "new_app"]

console = Console()
err_console = Console(stderr=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
QuickOpt = Annotated[bool, typer.Option(
    "--quick", help="Benchmark at the workloads' smaller quick_axes sizes (smoke runs, the demo).")]


def new_app(name: str, help: str) -> typer.Typer:
    """A typer app that shows help when called bare and never prints tracebacks with locals."""
    return typer.Typer(name=name, help=help, no_args_is_help=True, pretty_exceptions_enable=False,
                       add_completion=False)
