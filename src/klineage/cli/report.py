"""``klineage report RUN [--out DIR] [--json]``: write a run's static HTML + Markdown report.

Registered on the root app with ``app.command("report")(report_command)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from klineage.cli._common import JsonOpt, console, err_console
from klineage.errors import KlineageError

__all__ = ["report_command"]


def report_command(
    run: Annotated[Path, typer.Argument(help="A run folder (mine, optimize, bench or demo).")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Folder to write into (default: RUN/report).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write RUN/report/index.html, report.md and the PNG plots they show."""
    from klineage.report import write_report

    try:
        if as_json:
            paths = write_report(run, out)
        else:
            with console.status("", spinner="dots") as status:
                paths = write_report(run, out, say=lambda line: status.update(escape(line)))
    except KlineageError as exc:
        # soft_wrap: a long message stays one line however narrow the terminal is.
        err_console.print(Text.assemble(("error: ", "bold red"), str(exc)), highlight=False,
                          soft_wrap=True)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(paths.to_json(), indent=2))
        return
    console.print(f"report written: {escape(str(paths.html))}")
    console.print(f"markdown:       {escape(str(paths.markdown))}")
    console.print(f"plots:          {len(paths.plots)} PNG file(s) next to them")
