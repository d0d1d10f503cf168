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

__all__ = ["Event", "RunInterrupted", "RunStarted", "Tagged", "now"]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Tagged(BaseModel):
    """A family of records told apart by one field with a literal default in each subclass
    (events by ``event``, run records by ``kind``): each subclass registers itself in its
    family's ``KINDS``, so a reader finds the model by the tag it reads."""

    TAG: ClassVar[str]
    KINDS: ClassVar[dict[str, type[Tagged]]]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "KINDS" in cls.__dict__:  # a family's base, not one of its kinds
            return
        tag = cls.tag()
        if not isinstance(tag, str):
            raise TypeError(f"{cls.__name__} must give `{cls.TAG}` a literal default")
        if tag in cls.KINDS and cls.KINDS[tag] is not cls:
            raise TypeError(f"two models claim the {cls.TAG} {tag!r}")
        cls.KINDS[tag] = cls

    @classmethod
    def tag(cls) -> str:
        return cls.model_fields[cls.TAG].default

    @classmethod
    def schemas(cls) -> dict[str, dict[str, Any]]:
        return {tag: model.model_json_schema() for tag, model in sorted(cls.KINDS.items())}


class Event(Tagged):
    """One line of ``events.jsonl``."""

    model_config = ConfigDict(extra="forbid")
    TAG: ClassVar[str] = "event"
    KINDS: ClassVar[dict[str, type[Tagged]]] = {}

    event: str
    """The kind tag: a literal in each subclass."""
    t: str = Field(default_factory=now, description="When it was written (UTC, ISO 8601)")


class RunStarted(Event):
    event: Literal["run_started"] = "run_started"
    kind: str
    """What kind of run: mine, optimize, bench, demo."""
    name: str


class RunInterrupted(Event):
    """The run stopped before its end and can be resumed."""

    event: Literal["run_interrupted"] = "run_interrupted"
    reason: str
    waiting: int = 0
    """Gate jobs left waiting in a spool (``--no-wait``): how many."""
    flags: str = ""
    """What the resume command needs besides ``--resume`` (the spool's ``--executor``)."""

