"""Write a run's report folder: index.html, report.md and the PNGs they show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from klineage import __version__
from klineage.errors import ConfigError
from klineage.report._html import render_html
from klineage.report._markdown import render_markdown
from klineage.report._plots import bench_plot, lineage_plot, optimize_plot
from klineage.report._sections import Section, load_sections
from klineage.runs.rundir import write_atomic

__all__ = ["ReportPaths", "write_report"]

SayFn = Callable[[str], None]


@dataclass
class ReportPaths:
    """Where the report went."""

    html: Path
    markdown: Path
    plots: list[Path] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"html": str(self.html), "markdown": str(self.markdown),
                "plots": [str(p) for p in self.plots]}


def write_report(run_path: str | Path, out: str | Path | None = None,
                 say: SayFn | None = None) -> ReportPaths:
    """Render the run at ``run_path`` into ``out`` (default ``RUN/report/``)."""
    say = say or (lambda _: None)
    run = Path(run_path)
    say(f"reading {run}")
    title, sections = load_sections(run)
    folder = Path(out) if out is not None else run / "report"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the report folder {folder}: {exc}") from exc
    plots = []
    for section in sections:
        say(f"plotting {section.title}")
        plots += _draw(section, folder)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    paths = ReportPaths(html=folder / "index.html", markdown=folder / "report.md", plots=plots)
    say("writing HTML and Markdown")
    write_atomic(paths.html, render_html(title, sections, generated, __version__))
    write_atomic(paths.markdown, render_markdown(title, sections, generated, __version__))
    return paths


def _draw(section: Section, folder: Path) -> list[Path]:
    """Draw the section's plots; record each file name on the section for the templates."""
    prefix = section.anchor
    drawn: dict[str, Path | None] = {}
    if section.mine is not None:
        drawn["lineage"] = lineage_plot(section.mine, folder / f"{prefix}lineage.png")
    if section.optimize is not None:
        drawn["optimize"] = optimize_plot(section.optimize, folder / f"{prefix}optimize-curve.png")
    if section.bench is not None:
        drawn["bench"] = bench_plot(section.bench, folder / f"{prefix}bench-curves.png")
    section.plots = {role: path.name for role, path in drawn.items() if path is not None}
    return [path for path in drawn.values() if path is not None]
