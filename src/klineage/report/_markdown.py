"""The Markdown twin of the page: the same sections, PNGs linked by relative path."""

from __future__ import annotations

import re
from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined

from klineage.report._format import FILTERS
from klineage.report._sections import Section
from klineage.skills.card import SkillCard
from klineage.skills.render import skill_body

__all__ = ["render_markdown"]


def _cell(value: object) -> str:
    """One table cell: one line, pipes and angle brackets escaped."""
    text = " ".join(str(value).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;") or "-"


def _fenced(code: str, language: str = "") -> str:
    # A fence longer than any backtick run inside, so the code cannot close it early.
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def _card(card: SkillCard, level: int = 3) -> str:
    """A card's SKILL.md body with its headings moved down to ``level``."""
    shift = "#" * (level - 1)
    return re.sub(r"^(#+) ", lambda m: f"{shift}{m.group(1)} ", skill_body(card), flags=re.M)


@cache
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("klineage.report", "templates"), autoescape=False,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True)
    env.filters.update(FILTERS)
    env.filters.update({"cell": _cell, "fenced": _fenced, "card_md": _card})
    return env


def render_markdown(title: str, sections: list[Section], generated: str, version: str) -> str:
    template = _environment().get_template("report.md.j2")
    text = template.render(title=title, sections=sections, generated=generated, version=version)
    return re.sub(r"\n{3,}", "\n\n", text)
