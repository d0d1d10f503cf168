"""Skill cards, their rendering, and the library that stores, searches and exports them (DESIGN.md §6)."""

from klineage.skills.card import (
    Carrier,
    Effect,
    Evidence,
    Precondition,
    Rewrite,
    Risk,
    Scope,
    SkillCard,
    Trial,
    skill_id,
)
from klineage.skills.findings import Finding
from klineage.skills.library import Library
from klineage.skills.render import to_skill_md

__all__ = [
    "Carrier",
    "Effect",
    "Evidence",
    "Finding",
    "Library",
    "Precondition",
    "Rewrite",
    "Risk",
    "Scope",
    "SkillCard",
    "Trial",
    "skill_id",
    "to_skill_md",
]
