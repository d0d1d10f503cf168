"""The skill library on disk (DESIGN.md §6): ``skills/<id>/{SKILL.md, skill.json}`` plus ``index.json``,
and ``findings.json``: what each mined step measured, card or not (``skills.findings``).

``skill.json`` is the truth; ``SKILL.md`` and ``index.json`` are derived from it and rewritten with
it. Every write goes to a temporary file renamed into place, under a lock on the library, so a
reader never sees half a card and two writers never lose each other's merges.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import ValidationError

from klineage.errors import LibraryError
from klineage.skills._files import write_text_atomic
from klineage.skills.card import SkillCard, Trial
from klineage.skills.export import ExportFormat, export_cards
from klineage.skills.findings import Finding, FindingsFile
from klineage.skills.render import to_skill_md

__all__ = ["INDEX_SCHEMA_VERSION", "Library"]

INDEX_SCHEMA_VERSION = 1
_SKILLS_DIR = "skills"
_INDEX_FILE = "index.json"
_FINDINGS_FILE = "findings.json"
_LOCK_FILE = ".lock"
_CARD_JSON = "skill.json"
_CARD_MD = "SKILL.md"


class Library:
    """A folder of skill cards: add (merging), look up, search, log trials, export."""

    def __init__(self, root: Path) -> None:
        """Use ``Library.open``: it checks that the folder is a library."""
        self.root = Path(root)
        self._lock = FileLock(str(self.root / _LOCK_FILE))

    @classmethod
    def open(cls, path: str | Path, create: bool = False) -> Library:
        """The library at ``path``; with ``create``, an empty one is made when none is there."""
        root = Path(path)
        if not (root / _SKILLS_DIR).is_dir():
            if not create:
                raise LibraryError(f"no skill library at {root} (it has no {_SKILLS_DIR}/ folder); "
                                   "pass --library, or mine a workload to create one")
            try:
                (root / _SKILLS_DIR).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LibraryError(f"cannot create a skill library at {root}: {exc}") from exc
        library = cls(root)
        if not (root / _INDEX_FILE).exists():
            library.reindex()
        return library

    @property
    def skills_dir(self) -> Path:
        return self.root / _SKILLS_DIR

    def __repr__(self) -> str:
        return f"Library({str(self.root)!r})"

    # Reading

    def ids(self) -> list[str]:
        """The ids of every stored card, sorted."""
        return sorted(p.parent.name for p in self.skills_dir.glob(f"*/{_CARD_JSON}"))

    def get(self, id_or_prefix: str) -> SkillCard:
        """The card whose id is ``id_or_prefix``, or the only one whose id starts with it."""
        wanted = id_or_prefix.strip().lower()
        ids = self.ids()
        if wanted in ids:
            return self._load(wanted)
        matches = [card_id for card_id in ids if wanted and card_id.startswith(wanted)]
        if len(matches) == 1:
            return self._load(matches[0])
        if not matches:
            raise LibraryError(f"no skill {id_or_prefix!r} in {self.root} ({len(ids)} skills; "
                               "`klineage skills list --all` shows them)")
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise LibraryError(f"{id_or_prefix!r} matches {len(matches)} skills ({shown}); "
                           "give more of the id")

    def cards(self, admitted_only: bool = False) -> list[SkillCard]:
        """Every stored card, by id; only admitted ones with ``admitted_only``."""
        cards = [self._load(card_id) for card_id in self.ids()]
        return [card for card in cards if card.admitted or not admitted_only]

    def search(self, text: str = "", feature: str | None = None, op: str | None = None,
               language: str | None = None, platform: str | None = None,
               admitted_only: bool = False) -> list[SkillCard]:
        """Cards matching every word of ``text`` and every given filter, best first.

        A word matches when it occurs (case-insensitively) in the name, intent, anchor, feature,
        category or a precondition. ``op``, ``language`` and ``platform`` are checked with
        ``Scope.covers`` (glob patterns; an empty scope list matches no such filter).
        """
        words = re.findall(r"\w+", text.lower())
        found = []
        for card in self.cards(admitted_only=admitted_only):
            haystack = _searchable_text(card)
            if not all(word in haystack for word in words):
                continue
            if feature and card.feature.lower() != feature.lower():
                continue
            if not card.scope.covers(op=op, language=language, platform=platform):
                continue
            found.append(card)
        return sorted(found, key=_rank)

    def findings(self) -> list[Finding]:
        """Every stored finding (none before the first mine that measured one)."""
        path = self.root / _FINDINGS_FILE
        if not path.exists():
            return []
        try:
            return FindingsFile.model_validate_json(path.read_bytes()).findings
        except (OSError, ValidationError) as exc:
            raise LibraryError(f"{path}: damaged findings ({exc})") from exc

    def index(self) -> list[dict[str, Any]]:
        """The entries of index.json: ``SkillCard.summary()`` of each card."""
        try:
            data = json.loads((self.root / _INDEX_FILE).read_text(encoding="utf-8"))
            return list(data["skills"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LibraryError(f"{self.root / _INDEX_FILE}: unreadable index ({exc}); "
                               "Library.reindex() rebuilds it") from exc

    # Writing

    def add(self, card: SkillCard) -> SkillCard:
        """Store ``card``, merged into the stored card of the same id if there is one.

        Returns the card as stored. Adding a card the library already holds writes nothing.
        """
        with self._lock:
            stored = self._load(card.id) if (self._card_dir(card.id) / _CARD_JSON).exists() else None
            result = stored.merge(card) if stored else card
            if result is not stored:
                self._store(result)
            return result

    def add_findings(self, findings: list[Finding]) -> None:
        """Store ``findings``; each replaces the stored one of the same feature, workload,
        language and platform (a later mine measured it again)."""
        if not findings:
            return
        with self._lock:
            kept = {f.key(): f for f in self.findings()}
            kept.update((f.key(), f) for f in findings)
            stored = FindingsFile(findings=sorted(kept.values(), key=Finding.key))
            write_text_atomic(self.root / _FINDINGS_FILE, stored.model_dump_json(indent=2) + "\n")

    def record_trial(self, id_or_prefix: str, trial: Trial) -> SkillCard:
        """Log a round-trip trial on a card; a failed trial is also kept as risk evidence.

        Whether the card is admitted stays the caller's decision (the admission step).
        """
        with self._lock:
            updated = self.get(id_or_prefix).with_trial(trial)
            self._store(updated)
            return updated

    def reindex(self) -> None:
        """Rewrite index.json from the stored cards."""
        with self._lock:
            self._write_index()

    def export(self, dest: str | Path, format: ExportFormat,
               admitted_only: bool = False) -> list[Path]:
        """Export the cards to ``dest`` (see ``klineage.skills.export``); returns files written."""
        return export_cards(self.cards(admitted_only=admitted_only), Path(dest), format)

    # Storage

    def _card_dir(self, card_id: str) -> Path:
        return self.skills_dir / card_id

    def _load(self, card_id: str) -> SkillCard:
        path = self._card_dir(card_id) / _CARD_JSON
        try:
            return SkillCard.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise LibraryError(f"{path}: cannot read skill card ({exc.strerror})") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "card"
            raise LibraryError(f"{path}: damaged skill card ({where}: {first['msg']})") from exc

    def _store(self, card: SkillCard) -> None:
        folder = self._card_dir(card.id)
        # skill.json first: it is the record; SKILL.md and the index are derived from it.
        write_text_atomic(folder / _CARD_JSON, card.model_dump_json(indent=2) + "\n")
        write_text_atomic(folder / _CARD_MD, to_skill_md(card))
        self._write_index()

    def _write_index(self) -> None:
        entries = [card.summary() for card in self.cards()]
        payload = {"schema_version": INDEX_SCHEMA_VERSION, "skills": entries}
        write_text_atomic(self.root / _INDEX_FILE, json.dumps(payload, indent=2) + "\n")


def _searchable_text(card: SkillCard) -> str:
    parts = [card.name, card.intent, card.anchor, card.feature, card.category]
    for pre in card.preconditions:
        parts += [pre.category, pre.condition, pre.reason, pre.check or ""]
    return "\n".join(parts).lower()


def _rank(card: SkillCard) -> tuple[bool, float, str]:
    """Admitted cards first, then the larger measured speedup, then by name."""
    return (not card.admitted, -(card.geomean_ratio() or 0.0), card.name.lower())
