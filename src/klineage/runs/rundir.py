"""``runs/<id>/{run.json, events.jsonl, states/<fingerprint>/, lineage.json, skills/, report/}``.

``events.jsonl`` is append-only and fsynced after every event, so a run killed at any point
(SIGKILL included) loses at most the event being written; a torn last line is ignored on read
and cut off before the next append.
Everything else in the folder can be rebuilt from the events and the state folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from klineage.errors import ConfigError
from klineage.runs.events import Event

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
    def open(cls, path: Path) -> RunDir:
        run = cls(Path(path))
        if not (run.path / "run.json").is_file() or not (run.path / "events.jsonl").is_file():
            raise ConfigError(f"{path}: not a run directory (no run.json / events.jsonl)")
        return run

    @property
    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / "run.json").read_text())

    def log(self, event: E) -> E:
        """Append one event and fsync it before returning. A last line torn by a kill is cut off
        first: appended onto, it would have swallowed this event too."""
        line = (json.dumps(event.model_dump(mode="json")) + "\n").encode()  # the format of old runs
        with open(self.path / "events.jsonl", "a+b") as handle:
            _cut_torn_tail(handle)
            handle.write(line)
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
        """The state's kernel folder: every file in it is built and hashed."""
        return self.path / "states" / fingerprint

    def gate_dir(self, fingerprint: str) -> Path:
        """What the gate said of a state (reports, comparisons), apart from its kernel folder: a
        report written beside the source changed the kernel's content hash, so the same kernel
        was built again for its comparison and a spool job for it was another job."""
        return self.path / "gates" / fingerprint

    def write_json(self, name: str, data: Any) -> Path:
        path = self.path / name
        write_atomic(path, json.dumps(data, indent=2, default=str))
        return path


def _cut_torn_tail(handle: BinaryIO) -> None:
    end = handle.seek(0, os.SEEK_END)
    if end == 0:
        return
    handle.seek(end - 1)
    if handle.read(1) == b"\n":
        return
    keep, step = 0, 1 << 16
    while end > 0:  # the last newline, read backwards in blocks
        start = max(0, end - step)
        handle.seek(start)
        at = handle.read(end - start).rfind(b"\n")
        if at >= 0:
            keep = start + at + 1
            break
        end = start
    handle.truncate(keep)


def fingerprint_text(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]
