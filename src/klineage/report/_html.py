"""The HTML page: jinja2 templates (package data) with autoescaping on, CSS inlined."""

from __future__ import annotations

import re
from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from klineage.report._diff import diff_lines
from klineage.report._format import FILTERS
from klineage.report._sections import Section

__all__ = ["render_html"]


def _inline(text: str) -> Markup:
    """Card prose with its Markdown code spans (`x`) as <code>; everything else escaped."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


@cache
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("klineage.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    env.filters["diff_lines"] = diff_lines
    env.filters["inline"] = _inline
    return env


def render_html(title: str, sections: list[Section], generated: str, version: str) -> str:
    """The whole page; every run value is escaped by the template engine."""
    template = _environment().get_template("report.html.j2")
    return template.render(title=title, sections=sections, generated=generated, version=version)
