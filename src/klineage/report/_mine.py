"""A mine run read for display: the lineage as a chain naive → … → expert, with cards and gate facts."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from klineage.errors import ConfigError
from klineage.gate import GateReport
from klineage.lineage import Lineage, Rejection, Transition
from klineage.report._diff import reverse_diff
from klineage.runs import RunDir
from klineage.skills.card import SkillCard
from klineage.skills.library import Library

__all__ = ["MineView", "StateView", "StepView", "load_mine"]


@dataclass
class StateView:
    """One kernel state of the chain, with the gate's word on it.

    ``ms`` is the state's time in the paired comparison of the step that added it (the first
    state's, naive's, is the "without" time of the first step), so the chain, its plot and the
    step tables show one number per comparison; ``timed_in`` says which. A share of speed of light
    is shown only with the time it was computed from (``sol_ms``, the state's own profiled gate
    run): next to another timing of the same kernel it would be a different share.
    """

    fingerprint: str
    label: str
    verdict: str | None = None
    reason: str = ""
    ms: float | None = None
    timed_in: str = ""
    sol_fraction: float | None = None
    sol_ms: float | None = None
    rejections: list[Rejection] = field(default_factory=list)
    """Proposals that edited this state and were refused."""


@dataclass
class StepView:
    """One forward step: ``simpler`` + ``feature`` = ``faster``."""

    number: int
    transition: Transition
    forward_diff: str
    cards: list[SkillCard]
    note: str | None
    """Why the step produced no card, when it did not."""


@dataclass
class MineView:
    lineage: Lineage
    states: list[StateView]
    """Naive (or the simplest state reached) first, expert last."""
    steps: list[StepView]
    """steps[i] leads from states[i] to states[i + 1]."""
    cards: list[SkillCard]
    summary: dict[str, Any]

    @property
    def step_numbers(self) -> dict[str, int]:
        """Transition id → its forward step number (for links from a card's evidence)."""
        return {step.transition.id: step.number for step in self.steps}


def load_mine(run_path: Path) -> MineView:
    lineage = _read_lineage(run_path / "lineage.json")
    summary = _read_json(run_path / "summary.json") or {}
    cards = _run_cards(run_path)
    transitions = list(reversed(lineage.transitions))  # forward: the last removal is added first
    states = [_state(run_path, lineage, fp) for fp in reversed(lineage.states)]
    _label(states, lineage, transitions)
    for rejection in lineage.rejections:
        owner = next((s for s in states if s.fingerprint == rejection.state), None)
        if owner is not None:
            owner.rejections.append(rejection)
    steps = [StepView(number=i + 1, transition=t, forward_diff=reverse_diff(t.removal_diff),
                      cards=[c for c in cards if t.id in c.evidence.transitions],
                      note=_note(summary, t.feature))
             for i, t in enumerate(transitions)]
    return MineView(lineage=lineage, states=states, steps=steps, cards=cards, summary=summary)


def _read_lineage(path: Path) -> Lineage:
    if not path.is_file():
        raise ConfigError(f"{path.parent}: the mine run has no lineage.json (did it finish the walk?)")
    try:
        return Lineage.model_validate_json(path.read_text())
    except ValidationError as exc:
        raise ConfigError(f"{path}: not a lineage record ({exc.errors()[0]['msg']})") from exc


def _read_json(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from exc


def _run_cards(run_path: Path) -> list[SkillCard]:
    """The run-local library's cards, admitted or not."""
    if not (run_path / "skills").is_dir():
        return []
    return Library.open(run_path).cards(admitted_only=False)


def _state(run_path: Path, lineage: Lineage, fingerprint: str) -> StateView:
    view = StateView(fingerprint=fingerprint, label=fingerprint[:8])
    plain, profiled = _gate_reports(RunDir(run_path).gate_dir(fingerprint), lineage.workload)
    if plain is None and profiled is None:  # a run made before reports moved out of states/
        plain, profiled = _gate_reports(RunDir(run_path).state_dir(fingerprint), lineage.workload)
    report = plain or profiled
    if report is not None:
        view.verdict, view.reason = report.verdict.value, report.reason
    for candidate in (profiled, plain):
        if candidate is not None and candidate.sol is not None and candidate.sol.fraction is not None \
                and candidate.timing is not None:
            view.sol_fraction, view.sol_ms = candidate.sol.fraction, candidate.timing.median_s * 1e3
            break
    view.ms, view.timed_in = _ms_from_steps(lineage, fingerprint)
    return view


def _gate_reports(folder: Path, workload: str) -> tuple[GateReport | None, GateReport | None]:
    """The state's plain and profiled gate reports on the run's workload (the session names them
    ``gate-<workload>-<options key>[-profile].json``; older runs wrote no key)."""
    pattern = re.compile(rf"gate-{re.escape(workload)}(-[0-9a-f]{{12}})?(-profile)?\.json")
    found: dict[bool, GateReport | None] = {False: None, True: None}
    for path in sorted(folder.glob(f"gate-{workload}*.json")) if folder.is_dir() else ():
        match = pattern.fullmatch(path.name)
        if match is not None and found[bool(match.group(2))] is None:
            found[bool(match.group(2))] = _gate_report(path)
    return found[False], found[True]


def _gate_report(path: Path) -> GateReport | None:
    try:
        return GateReport.model_validate_json(path.read_text())
    except ValidationError:
        return None  # a damaged cache entry only costs the report a number


def _ms_from_steps(lineage: Lineage, fingerprint: str) -> tuple[float | None, str]:
    """The state's median in the paired comparison of the step that added it, and which step."""
    forward = list(reversed(lineage.transitions))
    for number, t in enumerate(forward, start=1):
        if t.faster_state == fingerprint and t.faster_ms is not None:
            return t.faster_ms, f"timed in step {number}, with {t.feature}"
    for number, t in enumerate(forward, start=1):
        if t.simpler_state == fingerprint and t.simpler_ms is not None:
            return t.simpler_ms, f"timed in step {number}, without {t.feature}"
    if fingerprint == lineage.expert and lineage.expert_ms is not None:
        return lineage.expert_ms, "timed in the end-to-end comparison"
    return None, ""


def _label(states: list[StateView], lineage: Lineage, forward: list[Transition]) -> None:
    for state, step in zip(states[1:], forward, strict=False):
        state.label = f"+ {step.feature}"
    if states:
        states[0].label = "naive" if lineage.naive_reached else "simplest reached"
        states[-1].label = "expert"


def _note(summary: dict[str, Any], feature: str) -> str | None:
    for note in summary.get("notes", []):
        if isinstance(note, str) and note.startswith(f"{feature}:"):
            return note[len(feature) + 1:].strip()
    return None
