"""The command-line options every brain-driven command shares (mine, optimize, bench).

    klineage mine W --brain openai --config klineage.toml --budget calls=50,usd=2 --record c.jsonl
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from klineage.config import load_config
from klineage.runs import Budget, RunDir

__all__ = ["BrainOpt", "BudgetOpt", "ConfigOpt", "RecordOpt", "ReplayOpt", "brain_settings"]

BrainOpt = Annotated[str | None, typer.Option(
    help="Who proposes edits: rules, openai, anthropic, agent or replay (default: klineage.toml, "
         "KLINEAGE_BRAIN, else rules).")]

def budget_option(default: str = "") -> Any:
    """``--budget``; ``default``: what a new run gets without it, shown in the help."""
    shown = f" A new run's default: {default}." if default else ""
    return Annotated[str | None, typer.Option(
        help="Limits, comma-separated: gate_runs=N, calls=N, tokens=N, usd=X, wall=10m (any subset), "
             "or 'unlimited'. "
             f"On --resume: a new budget for the rest of the run (default: the run's own).{shown}")]


BudgetOpt = budget_option()
ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", help="klineage.toml to use (default: KLINEAGE_CONFIG, else ./klineage.toml).")]
RecordOpt = Annotated[Path | None, typer.Option(
    help="Append every LLM exchange to this cassette (JSONL).")]
ReplayOpt = Annotated[Path | None, typer.Option(
    help="Answer every LLM request from this cassette, offline.")]


def brain_settings(brain: str | None, budget: str | None, config: Path | None,
                   record: Path | None, replay: Path | None,
                   resume: Path | None = None) -> dict[str, Any]:
    """Resolved keyword arguments for MineOptions and OptimizeOptions. A resumed run keeps the
    brain it was started with (another ``--brain`` is refused by the resume); ``budget`` None:
    not given (the command's default, or on resume the run's own)."""
    loaded = load_config(config)
    started_with = RunDir.open(resume).meta.get("brain") if resume else None
    name = brain or started_with or (
        "replay" if replay and loaded.brain.name == "rules" else loaded.brain.name)
    return {"brain": name, "config": loaded, "budget": Budget.parse(budget) if budget is not None else None,
            "record": record, "replay": replay}
