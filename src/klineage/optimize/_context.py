"""What the baselines may know: summarised memory of past slow→fast pairs, and raw expert sources.

Both are plain data gathered before a run, so a bench can filter them (leave-one-out) and a run
records exactly what it was shown.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from klineage.skills.card import SkillCard
from klineage.source import present

__all__ = ["ExpertSource", "MemoryPair", "expert_sources", "memory_pairs", "memory_text",
           "success_counts"]


@dataclass(frozen=True)
class MemoryPair:
    """One past slow→fast observation, with no preconditions attached (AccelOpt-style memory)."""

    workload: str
    feature: str
    ratio: float
    """Speedup (> 1 is faster)."""
    source: str
    """Where it was seen: 'card <id>', 'trial <target>', 'run <id>'."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ExpertSource:
    """The raw source of another workload's expert kernel."""

    workload: str
    language: str
    source: str

    def features(self) -> set[str]:
        return present(self.source, self.language)


def memory_pairs(cards: list[SkillCard], runs_root: Path | None = None,
                 exclude_workload: str | None = None) -> list[MemoryPair]:
    """Pairs from the cards' measured effects and trials and from finished optimize runs."""
    pairs = []
    for card in cards:
        pairs += [MemoryPair(e.workload, card.feature, e.ratio, f"card {card.id}") for e in card.effect]
        pairs += [MemoryPair(t.target.split("/")[0], card.feature, t.effect_observed, f"trial {t.target}")
                  for t in card.verification if t.effect_observed]
    if runs_root is not None and runs_root.is_dir():
        for path in sorted(runs_root.glob("*/optimize.json")):
            pairs += _run_pairs(path)
    return [p for p in pairs if p.workload != exclude_workload]


CORRECT = ("accepted", "slower")
"""Verdicts of a step whose candidate passed the gate and was compared (kept, or not faster)."""


def _run_pairs(path: Path) -> list[MemoryPair]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    name = Path(str(data.get("workload", ""))).name
    return [MemoryPair(name, step["feature"], 1 / step["ratio"], f"run {path.parent.name}")
            for step in data.get("steps", [])
            if step.get("feature") and step.get("ratio") and step.get("verdict") in CORRECT]


def success_counts(pairs: list[MemoryPair]) -> Counter[str]:
    """Per feature, how many past pairs made a kernel faster."""
    return Counter(p.feature for p in pairs if p.ratio > 1.0)


def memory_text(pairs: list[MemoryPair], limit: int = 40) -> str:
    """The summarised free-text memory a brain is shown (one line per feature, best first)."""
    by_feature: dict[str, list[MemoryPair]] = {}
    for pair in pairs:
        by_feature.setdefault(pair.feature, []).append(pair)
    counts = success_counts(pairs)
    lines = []
    for feature, seen in sorted(by_feature.items(), key=lambda kv: (-counts[kv[0]], kv[0])):
        best = max(seen, key=lambda p: p.ratio)
        lines.append(f"- {feature}: faster in {counts[feature]} of {len(seen)} past attempts; "
                     f"best {best.ratio:.2f}x on {best.workload}")
    if not lines:
        return "No past optimizations are remembered."
    return "Past slow→fast kernel pairs (no conditions recorded):\n" + "\n".join(lines[:limit])


def expert_sources(folders: list[Path], exclude_workload: str | None = None,
                   variant: str = "expert") -> list[ExpertSource]:
    """The expert kernel sources of the given workload folders (skipping ``exclude_workload``)."""
    from klineage.workload import load_kernel, load_workload

    found = []
    for folder in folders:
        workload = load_workload(folder)
        if workload.name == exclude_workload or not (folder / "kernels" / variant).is_dir():
            continue
        spec = load_kernel(workload, variant)
        found.append(ExpertSource(workload.name, spec.language, spec.source.read_text()))
    return found
