"""Export for people (markdown), programs (json) and coding agents (Agent Skills folders)."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from klineage.skills import Library, Precondition, SkillCard
from klineage.skills.export import agent_skill_description, agent_skill_names, export_cards

AGENT_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@pytest.fixture
def library(tmp_path, make_vector_card, make_omp_card):
    lib = Library.open(tmp_path / "library", create=True)
    lib.add(make_vector_card())
    lib.add(make_omp_card())
    return lib


def front_matter(path):
    header = path.read_text().split("---\n")[1]
    return yaml.safe_load(header)


def test_markdown_export_writes_a_page_per_card_and_a_readme(library, tmp_path):
    written = library.export(tmp_path / "md", "markdown")
    names = sorted(p.name for p in written)
    assert names == ["README.md", "parallelize-the-row-loop-with-openmp.md",
                     "vectorize-row-loads-with-float4.md"]
    readme = (tmp_path / "md" / "README.md").read_text()
    assert "[Vectorize row loads with float4](vectorize-row-loads-with-float4.md)" in readme
    page = tmp_path / "md" / "vectorize-row-loads-with-float4.md"
    assert front_matter(page)["feature"] == "vectorized_access"
    assert "## Measured effect" in page.read_text()


def test_json_export_is_one_array_of_full_cards(library, tmp_path):
    [path] = library.export(tmp_path / "js", "json")
    cards = [SkillCard.model_validate(item) for item in json.loads(path.read_text())]
    assert sorted(c.id for c in cards) == library.ids()
    assert cards == sorted(library.cards(), key=lambda c: c.id)


def test_agent_skills_folders_have_name_and_description(library, tmp_path):
    written = library.export(tmp_path / "agent", "agent-skills")
    assert len(written) == 2
    for path in written:
        assert path.name == "SKILL.md"
        header = front_matter(path)
        assert header["name"] == path.parent.name
        assert AGENT_NAME.match(header["name"]) and len(header["name"]) <= 64
        description = header["description"]
        assert 0 < len(description) <= 1024 and "\n" not in description
        assert all(isinstance(v, str) for v in header["metadata"].values())
        assert "## When to apply" in path.read_text()
    omp = front_matter(tmp_path / "agent" / "parallelize-the-row-loop-with-openmp" / "SKILL.md")
    assert omp["description"] == ("Split independent rows across cores. Use when optimizing kernels "
                                  "written in c or cpp where the build enables OpenMP (-fopenmp).")


def test_admitted_only_export(library, tmp_path):
    written = library.export(tmp_path / "agent", "agent-skills", admitted_only=True)
    assert [p.parent.name for p in written] == ["parallelize-the-row-loop-with-openmp"]


def test_colliding_titles_get_id_suffixes(make_vector_card):
    first = make_vector_card(id="aaaaaaaaaaaa", name="Use float4!")
    second = make_vector_card(id="bbbbbbbbbbbb", name="use FLOAT4")
    odd = make_vector_card(id="cccccccccccc", name="???")
    long = make_vector_card(id="dddddddddddd", name="x" * 100)
    names = agent_skill_names([first, second, odd, long])
    assert names == {"aaaaaaaaaaaa": "use-float4-aaaaaaaa", "bbbbbbbbbbbb": "use-float4-bbbbbbbb",
                     "cccccccccccc": "skill-cccccccccccc", "dddddddddddd": "x" * 64}
    assert all(AGENT_NAME.match(name) for name in names.values())


def test_description_of_a_hypothesis_warns_and_stays_short(make_vector_card):
    many = [Precondition(category="shape", condition="c" * 400, reason="r", source="check")] * 3
    text = agent_skill_description(make_vector_card(preconditions=many))
    assert len(text) <= 1024 and text.endswith("…")
    short = agent_skill_description(make_vector_card())
    assert short.startswith("Load four floats per instruction") and "rmsnorm kernels written in cuda" in short
    assert short.endswith("Unverified: gate every application.")


def test_unknown_format_is_refused(make_vector_card, tmp_path):
    with pytest.raises(ValueError, match="unknown export format"):
        export_cards([make_vector_card()], tmp_path, "html")  # type: ignore[arg-type]
