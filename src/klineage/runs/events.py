"""The run's event log as types: one pydantic model per kind of event, tagged by ``event``.

Each stage declares the events it writes, next to the code that writes them (the walk's in
``lineage/``, optimize's in ``optimize/``, ...); every model subclasses ``Event`` and sets
``event`` to a literal, which registers it. ``RunDir.log`` takes an event, ``RunDir.events``
reads lines back as the models asked for, so a reader never indexes a dict by a string key.
The JSON Schema of every kind: ``Event.schemas()``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Event", "RunInterrupted", "RunStarted", "now"]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Event(BaseModel):
    """One line of ``events.jsonl``."""

    model_config = ConfigDict(extra="forbid")
    KINDS: ClassVar[dict[str, type[Event]]] = {}

    event: str
    """The kind tag: a literal in each subclass."""
    t: str = Field(default_factory=now, description="When it was written (UTC, ISO 8601)")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        tag = cls.tag()
        if not isinstance(tag, str):
            raise TypeError(f"{cls.__name__} must give `event` a literal default")
        if tag in Event.KINDS and Event.KINDS[tag] is not cls:
            raise TypeError(f"two event models claim the kind {tag!r}")
        Event.KINDS[tag] = cls

    @classmethod
    def tag(cls) -> str:
        return cls.model_fields["event"].default

    @classmethod
    def schemas(cls) -> dict[str, dict[str, Any]]:
        return {tag: model.model_json_schema() for tag, model in sorted(Event.KINDS.items())}


class RunStarted(Event):
    event: Literal["run_started"] = "run_started"
    kind: str
    """What kind of run: mine, optimize, bench, demo."""
    name: str


class RunInterrupted(Event):
    """The run stopped before its end and can be resumed."""

    event: Literal["run_interrupted"] = "run_interrupted"
    reason: str

