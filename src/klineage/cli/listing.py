"""``klineage list [FOLDER] [--runs DIR] [--json]``: the workloads in a folder and the runs in a
runs folder, each run with its state (finished, stopped and how to go on, or neither: killed or
still running).

Registered on the root app with ``app.command("list")(list_command)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Column, Table

from klineage.cli._common import JsonOpt, console, user_errors
from klineage.errors import ConfigError, KlineageError

__all__ = ["list_command", "runs_in", "workloads_in"]


def list_command(
    folder: Annotated[Path, typer.Argument(
        help="A workload folder, or a folder of them (a suite).")] = Path("."),
    runs: Annotated[Path, typer.Option(help="The runs folder whose runs to list.")] = Path("runs"),
    as_json: JsonOpt = False,
) -> None:
    """List the workloads in FOLDER (each with its kernel variants) and the runs in --runs (each
    with its state)."""
    with user_errors():
        if not folder.is_dir():
            raise ConfigError(f"{folder}: no such folder")
        found = {"workloads": workloads_in(folder), "runs": runs_in(runs)}
    if as_json:
        print(json.dumps(found, indent=2))
        return
    workloads = Table(*_columns("workload", "op", "kernels", "folder"),
                      title=f"workloads in {escape(str(folder))}")
    for row in found["workloads"]:
        workloads.add_row(row["name"], row["op"], ", ".join(row["kernels"]) or "-",
                          escape(row["folder"]) if row["error"] is None else f"[red]{escape(row['error'])}")
    console.print(workloads if found["workloads"] else f"no workloads in {escape(str(folder))}")
    table = Table(*_columns("run", "kind", "name", "started", "state"), title=f"runs in {escape(str(runs))}")
    for row in found["runs"]:
        table.add_row(escape(row["run"]), row["kind"], row["name"], row["created_at"][:19],
                      escape(row["state"]))
    console.print(table if found["runs"] else f"no runs in {escape(str(runs))}")


def _columns(*names: str) -> list[Column]:
    """Columns that wrap rather than cut: a path or a resume command is copied whole."""
    return [Column(name, overflow="fold") for name in names]


def workloads_in(folder: Path) -> list[dict[str, Any]]:
    """The workload at ``folder``, or those in its sub-folders; one that does not load is listed
    with why (the others still are)."""
    from klineage.workload import load_workload

    candidates = [folder] if (folder / "workload.toml").is_file() else sorted(
        p for p in folder.iterdir() if (p / "workload.toml").is_file())
    rows = []
    for path in candidates:
        row: dict[str, Any] = {"folder": str(path), "name": path.name, "op": "", "kernels": [], "error": None}
        try:
            workload = load_workload(path)
            row.update(name=workload.name, op=workload.op)
        except KlineageError as exc:
            row["error"] = str(exc)
        kernels = path / "kernels"
        row["kernels"] = sorted(p.name for p in kernels.iterdir() if p.is_dir()) if kernels.is_dir() else []
        rows.append(row)
    return rows


def runs_in(root: Path) -> list[dict[str, Any]]:
    """Every run folder in ``root`` (newest last) with its kind, name and state."""
    from klineage.runs import RunDir, RunInterrupted, resume_command

    rows = []
    for meta in sorted(root.glob("*/run.json")) if root.is_dir() else ():
        path = meta.parent
        try:
            run = RunDir.open(path)
            kinds = run.event_kinds()
            record = run.meta
        except (KlineageError, OSError, ValueError) as exc:
            rows.append({"run": str(path), "kind": "?", "name": "?", "created_at": "",
                         "state": f"unreadable: {exc}"})
            continue
        kind = str(record.get("kind", "?"))
        if f"{kind}_finished" in kinds:
            state = "finished"
        elif kinds and kinds[-1] == "run_interrupted":
            stops = run.events(RunInterrupted)
            hint = resume_command(kind, path, str(record.get("workload")), record.get("sizing") == "quick",
                                  record.get("gate"))
            state = (f"waiting for {stops[-1].waiting} gate job(s): drain the spool, then continue "
                     f"it with {hint} {stops[-1].flags}" if stops and stops[-1].waiting
                     else f"stopped: continue it with {hint}")
        else:
            state = "not finished (killed, or still running)"
        rows.append({"run": str(path), "kind": kind, "name": str(record.get("name", "")),
                     "created_at": str(record.get("created_at", "")), "state": state})
    return rows
