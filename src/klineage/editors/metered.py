"""A brain whose every call is charged to a run's meter: the one way brains are metered (mine's
walk, re-derivation, lift and admission; optimize's methods)."""

from __future__ import annotations

from typing import Any

from klineage.editors.base import Answer
from klineage.runs.budget import Meter, Usage

__all__ = ["MeteredEditor"]


class MeteredEditor:
    """A brain whose every call is charged to a meter (``what`` names the call and the prompt
    template version, e.g. ``openai.simplify@v1``). A call made once the budget is used up is not
    made: it comes back as a failure saying so."""

    def __init__(self, brain: Any, meter: Meter):
        self.brain, self.meter = brain, meter
        self.name = brain.name
        self.exhaustive = getattr(brain, "exhaustive", False)
        self.prompt_version = getattr(brain, "prompt_version", "-")

    def _what(self, method: str) -> str:
        return f"{self.brain.name}.{method}@{self.prompt_version}"

    def _answered(self, method: str, *args: Any) -> Any:
        reason = self.meter.exhausted()
        if reason:
            return Answer([], failures=[reason])
        answer = getattr(self.brain, method)(*args)
        if answer.usage.calls:
            self.meter.charge_brain(answer.usage, self._what(method))
        return answer

    def simplify(self, state: Any, ctx: Any) -> Any:
        return self._answered("simplify", state, ctx)

    def rederive(self, simpler: Any, feature: str, ctx: Any, tunables: dict[str, Any]) -> Any:
        return self._answered("rederive", simpler, feature, ctx, tunables)

    def materialize(self, state: Any, card: Any, ctx: Any) -> Any:
        return self._answered("materialize", state, card, ctx)

    def improve(self, state: Any, ctx: Any) -> Any:
        return self._answered("improve", state, ctx)

    def lift(self, facts: dict[str, Any]) -> tuple[dict[str, str], Usage]:
        text, usage = self.brain.lift(facts)
        if usage.calls:
            self.meter.charge_brain(usage, self._what("lift"))
        return text, usage
