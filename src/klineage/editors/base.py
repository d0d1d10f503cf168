"""The Editor seam ("brain"): who proposes kernel edits. Every proposal is gated by the caller.

A brain never decides anything: it proposes whole kernel versions, each meant to remove or
insert one feature, and reports what asking cost. The rules brain (``rules.py``) is the offline,
deterministic implementation; LLM and agent brains implement the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from klineage.runs.budget import Usage
from klineage.source import Edit
from klineage.workload import KernelState, Workload

__all__ = ["Answer", "EditContext", "Editor", "Proposal", "Usage"]


@dataclass(frozen=True)
class Proposal:
    """A proposed kernel version."""

    state: KernelState
    feature: str | None
    direction: Literal["remove", "insert", "improve"]
    rationale: str
    edit: Edit | None = None
    """Pass-based proposals carry the precise edit (sites, params, diff)."""


@dataclass(frozen=True)
class Answer:
    proposals: list[Proposal]
    usage: Usage = field(default_factory=Usage)
    failures: list[str] = field(default_factory=list)
    """Unusable answers (no code, unparsable diff, ...): recorded, never raised."""


@dataclass(frozen=True)
class EditContext:
    """What a brain may know about the kernel it edits."""

    workload: Workload
    features: tuple[str, ...] = ()
    feedback: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Editor(Protocol):
    name: str

    def simplify(self, state: KernelState, ctx: EditContext) -> Answer:
        """Proposals that each remove exactly one feature (the backward step)."""

    def rederive(self, simpler: KernelState, feature: str, ctx: EditContext,
                 tunables: dict[str, Any]) -> Answer:
        """Proposals that restore ``feature`` on the simpler kernel (never by reversing a diff)."""

    def lift(self, facts: dict[str, Any]) -> tuple[dict[str, str], Usage]:
        """Text fields of a skill card (name, intent, anchor, carrier summary) from facts."""

    def materialize(self, state: KernelState, card: Any, ctx: EditContext) -> Answer:
        """Proposals applying a skill card to a kernel that did not produce it."""

    def improve(self, state: KernelState, ctx: EditContext) -> Answer:
        """Proposals making ``state`` faster with no skill card: the baselines' step.

        ``ctx.feedback`` carries the last gate result; ``ctx.extra`` may carry ``memory``
        (summarised past slow→fast pairs) or ``expert_source`` (a raw expert kernel).
        """
