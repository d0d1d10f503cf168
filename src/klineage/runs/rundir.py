"""``runs/<id>/{run.json, events.jsonl, states/<fingerprint>/, lineage.json, skills/, report/}``.

``events.jsonl`` is append-only and fsynced after every event, so a run killed at any point
(SIGKILL included) loses at most the event being written; a torn last line is ignored on read.
Everything else in the folder can be rebuilt from the events and the state folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from klineage.errors import ConfigError
from klineage.runs.events import Event, RunStarted, now

E = TypeVar("E", bound=Event)

__all__ = ["RunDir", "fingerprint_text", "new_run_id", "write_atomic"]


def new_run_id(kind: str, name: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{kind}-{name}-{secrets.token_hex(3)}"


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class RunDir:
    """One run's folder."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, root: Path, kind: str, name: str, meta: dict[str, Any]) -> RunDir:
        run = cls(root / new_run_id(kind, name))
        (run.path / "states").mkdir(parents=True)
        write_atomic(run.path / "run.json", json.dumps({"kind": kind, "name": name,
                                                        "created_at": now(), **meta}, indent=2))
        run.log(RunStarted(kind=kind, name=name))
        return run

    @classmethod
    def open(cls, path: Path) -> RunDir:
        run = cls(Path(path))
        if not (run.path / "run.json").is_file() or not (run.path / "events.jsonl").is_file():
            raise ConfigError(f"{path}: not a run directory (no run.json / events.jsonl)")
        return run

    @property
    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / "run.json").read_text())

    def log(self, event: E) -> E:
        """Append one event and fsync it before returning."""
        with open(self.path / "events.jsonl", "a") as handle:
            handle.write(json.dumps(event.model_dump(mode="json")) + "\n")  # the format of old runs
            handle.flush()
            os.fsync(handle.fileno())
        return event

    def events(self, *kinds: type[E]) -> list[E]:
        """Every complete event of the given kinds, in order (a line torn by a kill is skipped)."""
        wanted = {kind.tag(): kind for kind in kinds}
        return [wanted[record["event"]].model_validate(record) for record in self._records()
                if record.get("event") in wanted]

    def event_kinds(self) -> list[str]:
        """The kind of every complete event, in order."""
        return [str(record.get("event")) for record in self._records()]

    def _records(self) -> list[dict[str, Any]]:
        records = []
        for line in (self.path / "events.jsonl").read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return records

    def state_dir(self, fingerprint: str) -> Path:
        return self.path / "states" / fingerprint

    def write_json(self, name: str, data: Any) -> Path:
        path = self.path / name
        write_atomic(path, json.dumps(data, indent=2, default=str))
        return path


def fingerprint_text(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]
