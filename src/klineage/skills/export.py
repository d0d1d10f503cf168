"""Export cards for people (Markdown), programs (one JSON array) and coding agents (Agent Skills).

Agent Skills is the folder format Claude Code, Codex and other agents load: ``<name>/SKILL.md`` whose
YAML front matter has ``name`` (1-64 lowercase letters, digits and single hyphens, equal to the
folder name) and ``description`` (at most 1024 characters: what the skill does and when to use it).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, get_args

from klineage.skills._files import write_text_atomic
from klineage.skills.card import SkillCard
from klineage.skills.render import render_front_matter, skill_body, to_skill_md

__all__ = [
    "EXPORT_FORMATS",
    "ExportFormat",
    "agent_skill_description",
    "agent_skill_names",
    "export_cards",
]

ExportFormat = Literal["markdown", "json", "agent-skills"]
EXPORT_FORMATS: tuple[str, ...] = get_args(ExportFormat)

_NAME_LIMIT = 64
_DESCRIPTION_LIMIT = 1024
_CONDITIONS_IN_DESCRIPTION = 3


def export_cards(cards: Sequence[SkillCard], dest: Path, format: ExportFormat) -> list[Path]:
    """Write ``cards`` under ``dest`` in ``format``; returns the files written.

    Files of the same names are replaced; nothing else in ``dest`` is touched.
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format!r}; expected one of {EXPORT_FORMATS}")
    dest.mkdir(parents=True, exist_ok=True)
    ordered = sorted(cards, key=lambda card: card.id)
    if format == "json":
        return [_write(dest / "skills.json", _json_array(ordered))]
    names = agent_skill_names(ordered)
    if format == "markdown":
        return _export_markdown(ordered, names, dest)
    return _export_agent_skills(ordered, names, dest)


def agent_skill_names(cards: Sequence[SkillCard]) -> dict[str, str]:
    """Card id → a valid, unique Agent Skills name made from the card's title.

    Cards whose titles make the same name all get an id suffix, so no card is privileged by the
    order in which it was added.
    """
    base = {card.id: _slug(card.name) or f"skill-{card.id}" for card in cards}
    taken = Counter(base.values())
    return {card_id: name if taken[name] == 1 else _with_suffix(name, card_id)
            for card_id, name in base.items()}


def agent_skill_description(card: SkillCard) -> str:
    """One line for an agent's skill catalogue: what the card does, then when to use it."""
    intent = " ".join(card.intent.split()).rstrip(".")
    ops, languages = _any_of(card.scope.ops), _any_of(card.scope.languages)
    when = f"Use when optimizing {ops + ' ' if ops else ''}kernels"
    if languages:
        when += f" written in {languages}"
    conditions = [" ".join(p.condition.split()).rstrip(".")
                  for p in card.preconditions[:_CONDITIONS_IN_DESCRIPTION]]
    if conditions:
        when += " where " + "; ".join(conditions)
    text = f"{intent}. {when}."
    if not card.admitted:
        text += " Unverified: gate every application."
    if len(text) <= _DESCRIPTION_LIMIT:
        return text
    return text[: _DESCRIPTION_LIMIT - 1].rsplit(" ", 1)[0] + "…"


def _export_markdown(cards: Sequence[SkillCard], names: dict[str, str], dest: Path) -> list[Path]:
    written = [_write(dest / f"{names[card.id]}.md", to_skill_md(card)) for card in cards]
    rows = ["# klineage skills", "",
            "| skill | feature | category | ops | languages | admitted | geomean speedup |",
            "|" + "---|" * 7]
    for card in cards:
        ratio = card.geomean_ratio()
        rows.append(
            f"| [{card.name}]({names[card.id]}.md) | `{card.feature}` | {card.category} "
            f"| {', '.join(card.scope.ops) or '-'} | {', '.join(card.scope.languages) or '-'} "
            f"| {'yes' if card.admitted else 'no'} | {f'{ratio:.2f}x' if ratio else '-'} |"
        )
    written.append(_write(dest / "README.md", "\n".join(rows) + "\n"))
    return written


def _export_agent_skills(cards: Sequence[SkillCard], names: dict[str, str],
                         dest: Path) -> list[Path]:
    written = []
    for card in cards:
        name = names[card.id]
        ratio = card.geomean_ratio()
        header = {
            "name": name,
            "description": agent_skill_description(card),
            # The spec allows a string-to-string metadata map for anything else.
            "metadata": {
                "klineage-id": card.id,
                "feature": card.feature,
                "category": card.category,
                "admitted": str(card.admitted).lower(),
                "geomean-speedup": f"{ratio:.3f}" if ratio else "unmeasured",
            },
        }
        text = render_front_matter(header) + "\n" + skill_body(card)
        written.append(_write(dest / name / "SKILL.md", text))
    return written


def _json_array(cards: Sequence[SkillCard]) -> str:
    return json.dumps([card.model_dump(mode="json") for card in cards], indent=2) + "\n"


def _write(path: Path, text: str) -> Path:
    write_text_atomic(path, text)
    return path


def _slug(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:_NAME_LIMIT].rstrip("-")


def _with_suffix(name: str, card_id: str) -> str:
    suffix = card_id[:8]
    return f"{name[: _NAME_LIMIT - len(suffix) - 1].rstrip('-')}-{suffix}"


def _any_of(patterns: list[str]) -> str:
    """'a or b' for concrete entries; '' when the list is empty or has a wildcard (anything goes)."""
    if not patterns or any(any(c in p for c in "*?[") for p in patterns):
        return ""
    return " or ".join(patterns)
