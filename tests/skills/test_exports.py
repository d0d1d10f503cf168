"""The skills stage's public surface is pinned: changing it is a conscious act."""

from __future__ import annotations

import klineage.skills


def test_skills_exports_are_pinned():
    expected = ["Carrier", "Effect", "Evidence", "Finding", "Library", "Precondition", "Rewrite", "Risk",
                "Scope", "SkillCard", "Trial", "skill_id", "to_skill_md"]
    assert sorted(klineage.skills.__all__) == expected
    assert all(hasattr(klineage.skills, name) for name in expected)
