"""What a report shows: one section per run (a demo run contributes one per child)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klineage.bench.records import BenchRecord
from klineage.errors import ConfigError
from klineage.optimize.records import OptimizeRecord
from klineage.report._mine import MineView, load_mine
from klineage.report._records import read_record

__all__ = ["KINDS", "Section", "load_sections", "read_meta"]

KINDS = ("mine", "optimize", "bench", "demo")


@dataclass
class Section:
    """One run's part of the page; ``anchor`` prefixes its HTML ids and plot file names."""

    kind: str
    title: str
    anchor: str
    run_path: Path
    meta: dict[str, Any]
    mine: MineView | None = None
    optimize: OptimizeRecord | None = None
    bench: BenchRecord | None = None
    plots: dict[str, str] = field(default_factory=dict)
    """Plot role ('lineage', 'optimize', 'bench') → PNG file name next to the page."""


def read_meta(run_path: Path) -> dict[str, Any]:
    """run.json of ``run_path``, checked to name a kind the report can draw."""
    meta_path = run_path / "run.json"
    if not run_path.is_dir():
        raise ConfigError(f"{run_path}: no such run directory")
    if not meta_path.is_file():
        raise ConfigError(f"{run_path}: not a run directory (no run.json)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{meta_path}: not JSON ({exc})") from exc
    kind = meta.get("kind") if isinstance(meta, dict) else None
    if kind not in KINDS:
        raise ConfigError(f"{run_path}: unknown run kind {kind!r} in run.json "
                          f"(a report draws {', '.join(KINDS)} runs)")
    return meta


def load_sections(run_path: Path) -> tuple[str, list[Section]]:
    """The page title and its sections."""
    meta = read_meta(run_path)
    if meta["kind"] != "demo":
        return _title(run_path, meta), [_section(run_path, meta, anchor="")]
    children = meta.get("children")
    if not isinstance(children, list) or not children:
        raise ConfigError(f"{run_path}: a demo run.json needs a non-empty 'children' list of run paths")
    sections = []
    for number, child in enumerate(children, start=1):
        child_path = _resolve(run_path, str(child))
        child_meta = read_meta(child_path)
        if child_meta["kind"] == "demo":
            raise ConfigError(f"{child_path}: a demo's child is itself a demo run; nest no demos")
        sections.append(_section(child_path, child_meta, anchor=f"s{number}-"))
    return f"demo — {meta.get('name') or run_path.name}", sections


def _section(run_path: Path, meta: dict[str, Any], anchor: str) -> Section:
    section = Section(kind=meta["kind"], title=_title(run_path, meta), anchor=anchor,
                      run_path=run_path, meta=meta)
    if section.kind == "mine":
        section.mine = load_mine(run_path)
    elif section.kind == "optimize":
        section.optimize = read_record(run_path / "optimize.json", OptimizeRecord)
    else:
        section.bench = read_record(run_path / "bench.json", BenchRecord)
    return section


def _title(run_path: Path, meta: dict[str, Any]) -> str:
    name = meta.get("name") or meta.get("workload") or meta.get("suite") or run_path.name
    return f"{meta['kind']} — {Path(str(name)).name}"


def _resolve(run_path: Path, child: str) -> Path:
    """A child path as written: absolute, or relative to the demo run, its parent, or the cwd."""
    path = Path(child)
    if path.is_absolute():
        return path
    for base in (run_path, run_path.parent, Path.cwd()):
        if (base / path / "run.json").is_file():
            return base / path
    raise ConfigError(f"{run_path}: demo child {child!r} not found (relative to the demo run, "
                      f"its parent folder, or the working directory)")
