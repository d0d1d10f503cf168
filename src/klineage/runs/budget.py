"""One meter for everything a run spends: brain calls, tokens, dollars, gate runs, wall time.

``Budget`` is what the user allows (``--budget gate_runs=40,usd=2,wall=10m``); ``Meter`` counts
what was spent, writes every charge to the run's event log, and says when a limit is reached.
A resumed run rebuilds its meter from the last ``charge`` event, so nothing is spent twice.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

from klineage.errors import ConfigError
from klineage.runs.events import Event

__all__ = ["Budget", "Charge", "Meter", "Spent", "Usage"]

LogFn = Callable[[Event], Any]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_KEYS = {"gate_runs": "gate_runs", "gates": "gate_runs", "calls": "calls", "tokens": "tokens",
         "usd": "usd", "wall": "wall_s", "wall_s": "wall_s"}


@dataclass(frozen=True)
class Usage:
    """What one or more brain calls cost."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(a + b for a, b in zip(self.__dict__.values(), other.__dict__.values(),
                                             strict=True)))


@dataclass(frozen=True)
class Budget:
    """Limits; None means unlimited."""

    gate_runs: int | None = None
    calls: int | None = None
    tokens: int | None = None
    """Input + output tokens (cached input tokens count as input)."""
    usd: float | None = None
    wall_s: float | None = None

    @classmethod
    def parse(cls, text: str) -> Budget:
        """``gate_runs=40,calls=100,tokens=2e6,usd=2.5,wall=10m`` (wall: s, m or h; bare = s), or
        ``unlimited``. An empty text is refused: it used to mean unlimited, silently."""
        if text.strip() == "unlimited":
            return cls()
        if not text.strip():
            raise ConfigError("--budget is empty: give KEY=VALUE pairs (gate_runs=8,usd=2,...) "
                              "or 'unlimited'")
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, raw = part.partition("=")
            name = _KEYS.get(key.strip())
            if not sep or name is None:
                raise ConfigError(f"--budget: {part!r} is not KEY=VALUE with KEY one of "
                                  f"{', '.join(sorted(set(_KEYS) - {'gates', 'wall_s'}))}")
            values[name] = _parse_value(name, raw.strip(), part)
        if values.get("gate_runs") == 0:
            raise ConfigError("--budget: gate_runs=0 allows no gate run, and the start kernel "
                              "needs one; give at least gate_runs=1")
        return cls(**values)

    def describe(self) -> str:
        parts = [f"{f.name}={getattr(self, f.name):g}" for f in fields(self)
                 if getattr(self, f.name) is not None]
        return ",".join(parts) or "unlimited"


def _parse_value(name: str, raw: str, part: str) -> float | int:
    match = re.fullmatch(r"([0-9.]+(?:e[0-9]+)?)([smh]?)", raw.lower())
    if not match or (match.group(2) and name != "wall_s"):
        raise ConfigError(f"--budget: {part!r}: {raw!r} is not a number"
                          + (" (with an optional s/m/h unit)" if name == "wall_s" else ""))
    value = float(match.group(1)) * _UNITS.get(match.group(2) or "s", 1.0)
    if value < 0:
        raise ConfigError(f"--budget: {part!r} must not be negative")
    return int(value) if name in {"gate_runs", "calls", "tokens"} else value


@dataclass(frozen=True)
class Spent:
    gate_runs: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    usd: float = 0.0
    wall_s: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Charge(Event):
    """Something spent, with the run's totals after it."""

    event: Literal["charge"] = "charge"
    kind: Literal["brain", "gate"]
    what: str
    cost: dict[str, Any]
    """What this charge cost (a brain call's usage; empty for a gate run)."""
    total: dict[str, Any]
    """``Spent`` after it: a resumed run's meter starts from the last one."""


class Meter:
    """Counts spending against a budget; every charge is logged with the running totals."""

    def __init__(self, budget: Budget = Budget(), log: LogFn | None = None,
                 already: Spent = Spent()):
        self.budget = budget
        self._log = log
        self._base = already
        self._spent = already
        self._started = time.monotonic()

    @classmethod
    def resume(cls, budget: Budget, charges: Iterable[Charge], log: LogFn | None = None) -> Meter:
        """A meter that continues from the last ``charge`` event of a run's log."""
        totals = [charge.total for charge in charges]
        return cls(budget, log, Spent(**totals[-1]) if totals else Spent())

    @property
    def spent(self) -> Spent:
        return replace(self._spent, wall_s=self._base.wall_s + time.monotonic() - self._started)

    def charge_brain(self, usage: Usage, what: str) -> None:
        s = self._spent
        self._record("brain", what, replace(
            s, calls=s.calls + usage.calls, input_tokens=s.input_tokens + usage.input_tokens,
            output_tokens=s.output_tokens + usage.output_tokens,
            cached_tokens=s.cached_tokens + usage.cached_tokens, usd=s.usd + usage.usd),
            asdict(usage))

    def charge_gate(self, what: str) -> None:
        self._record("gate", what, replace(self._spent, gate_runs=self._spent.gate_runs + 1), {})

    def exhausted(self) -> str | None:
        """Why the budget is used up, or None while there is some left."""
        spent, budget = self.spent, self.budget
        checks = [("gate runs", spent.gate_runs, budget.gate_runs),
                  ("brain calls", spent.calls, budget.calls),
                  ("tokens", spent.tokens, budget.tokens), ("dollars", spent.usd, budget.usd),
                  ("wall seconds", spent.wall_s, budget.wall_s)]
        for label, used, limit in checks:
            if limit is not None and used >= limit:
                return f"budget reached: {label} {used:g} of {limit:g}"
        return None

    def _record(self, kind: Literal["brain", "gate"], what: str, total: Spent, cost: dict[str, Any]) -> None:
        self._spent = total
        if self._log is not None:
            self._log(Charge(kind=kind, what=what, cost=cost, total=asdict(self.spent)))
