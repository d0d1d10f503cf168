"""SKILL.md: valid YAML front matter and every section a reader needs."""

from __future__ import annotations

import yaml

from klineage.skills import Carrier, to_skill_md
from klineage.skills.render import skill_body

SECTIONS = ["## Intent", "## When to apply", "## Where", "## How", "## Measured effect", "## Risks",
            "## Evidence", "## Verification log"]


def split_front_matter(text: str) -> tuple[dict, str]:
    assert text.startswith("---\n")
    header, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


def test_front_matter_is_valid_yaml(make_vector_card):
    card = make_vector_card()
    header, _ = split_front_matter(to_skill_md(card))
    assert header["name"] == card.name
    assert header["description"] == card.intent
    assert header["id"] == card.id and header["feature"] == "vectorized_access"
    assert header["category"] == "memory" and header["admitted"] is False
    assert header["provides"] == ["vectorized_access"] and header["requires"] == []
    assert header["scope"]["platforms"] == ["nvidia-sm90*"]


def test_body_has_every_section_with_the_cards_facts(make_vector_card):
    card = make_vector_card()
    _, body = split_front_matter(to_skill_md(card))
    positions = [body.index(section) for section in SECTIONS]
    assert positions == sorted(positions)
    assert "**alignment**: N is a multiple of 4" in body and "`N % 4 == 0`" in body
    assert "```cuda\nfor (int j = t; j < N; j += B)" in body
    assert "```diff\n" in body and "`vector_width` = `4`" in body
    assert "| rmsnorm | M=4096, N=4096 | nvidia-sm90-cuda13.0 | 0.2 | 0.1 | 2.00x | 1.90–2.10 | 40% | 80% |" \
        in body
    assert "misaligned float4 load crashed" in body and "`t-0003`" in body
    assert "not admitted" in body


def test_empty_sections_say_so(make_omp_card):
    body = skill_body(make_omp_card(effect=[], risk=[], verification=[]))
    assert "No measurements yet." in body and "No failures recorded." in body
    assert "No trials yet." in body and "```c\n" in body


def test_snippets_with_backticks_keep_their_fence(make_vector_card):
    card = make_vector_card(carrier=Carrier(summary="s", before="x = ```y```;", after="z"))
    assert "````cuda\nx = ```y```;\n````" in skill_body(card)


def test_table_cells_escape_pipes_and_newlines(make_vector_card):
    from klineage.skills import Trial

    card = make_vector_card(verification=[Trial(target="a/b", held_out=True, verdict="incorrect",
                                                reason="x | y\nz", at="t")])
    assert "| t | a/b | yes | incorrect | - | x \\| y z |" in skill_body(card)
