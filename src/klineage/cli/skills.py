"""``klineage skills list|show|search|export``: browse a skill library from the command line.

Mounted by the root app with ``app.add_typer(skills_app, name="skills")``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table

from klineage.cli._common import JsonOpt, console, new_app, user_errors
from klineage.skills.card import SkillCard
from klineage.skills.export import ExportFormat, export_cards
from klineage.skills.library import Library
from klineage.skills.render import skill_body

__all__ = ["skills_app"]

skills_app = new_app("skills", "Browse, search and export a library of verified optimization skills.")

LibraryOpt = Annotated[Path, typer.Option("--library", help="The skill library folder.")]
AllOpt = Annotated[bool, typer.Option(
    "--all", help="Include cards not admitted yet (hypotheses no round trip has confirmed).")]
DEFAULT_LIBRARY = Path("library")




@skills_app.command("list")
def list_skills(library: LibraryOpt = DEFAULT_LIBRARY, include_all: AllOpt = False,
                as_json: JsonOpt = False) -> None:
    """List the admitted skills (all cards with --all)."""
    with user_errors():
        every_card = Library.open(library).cards()
    shown = [card for card in every_card if include_all or card.admitted]
    if as_json:
        _print_json([card.summary() for card in shown])
        return
    console.print(skills_table(shown, title=f"skills in {library}"))
    hidden = len(every_card) - len(shown)
    if hidden:
        console.print(f"{hidden} card(s) not admitted yet; --all shows them.")


@skills_app.command()
def show(skill: Annotated[str, typer.Argument(help="A skill id or a unique prefix of one.")],
         library: LibraryOpt = DEFAULT_LIBRARY, as_json: JsonOpt = False) -> None:
    """Show one skill card: intent, preconditions, carrier, effect, risks, trials."""
    with user_errors():
        card = Library.open(library).get(skill)
    if as_json:
        _print_json(card.model_dump(mode="json"))
        return
    console.print(Markdown(skill_body(card)))


@skills_app.command()
def search(
    text: Annotated[str, typer.Argument(help="Words that must all occur in the card.")] = "",
    feature: Annotated[str | None, typer.Option(help="Only cards adding this feature.")] = None,
    op: Annotated[str | None, typer.Option(help="Only cards whose scope covers this op.")] = None,
    language: Annotated[str | None, typer.Option(
        help="Only cards whose scope covers this language.")] = None,
    library: LibraryOpt = DEFAULT_LIBRARY,
    as_json: JsonOpt = False,
) -> None:
    """Search the cards (admitted or not) by words, feature, op and language; best first."""
    with user_errors():
        found = Library.open(library).search(text, feature=feature, op=op, language=language)
    if as_json:
        _print_json([card.summary() for card in found])
        return
    console.print(skills_table(found, title=f"{len(found)} match(es) in {library}"))


@skills_app.command()
def export(
    dest: Annotated[Path, typer.Argument(help="Folder to write into (created if missing).")],
    format: Annotated[ExportFormat, typer.Option(
        "--format", help="markdown: one .md per card + README; json: skills.json; "
        "agent-skills: <name>/SKILL.md folders coding agents load.")] = "agent-skills",
    library: LibraryOpt = DEFAULT_LIBRARY,
    include_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Export the admitted skills (all cards with --all) for people, programs or coding agents."""
    with user_errors():
        cards = Library.open(library).cards(admitted_only=not include_all)
        written = export_cards(cards, dest, format)
    if as_json:
        _print_json({"format": format, "skills": len(cards), "files": [str(p) for p in written]})
        return
    console.print(f"exported {len(cards)} skill(s) as {format} to {dest} ({len(written)} files)")


def skills_table(cards: Sequence[SkillCard], title: str = "") -> Table:
    """One row per card: id prefix, name, feature, scope, admission, speedup."""
    table = Table(title=title or None)
    # An 8-character prefix is enough for `show` and keeps the table readable in 80 columns.
    table.add_column("id", no_wrap=True)
    table.add_column("name", ratio=3, overflow="fold")
    table.add_column("feature", ratio=2, overflow="fold")
    table.add_column("scope", ratio=2, overflow="fold")
    table.add_column("admitted", no_wrap=True)
    table.add_column("speedup", justify="right", no_wrap=True)
    for card in cards:
        ratio = card.geomean_ratio()
        scope = f"{', '.join(card.scope.ops) or '-'} · {', '.join(card.scope.languages) or '-'}"
        table.add_row(
            card.id[:8],
            escape(card.name),
            card.feature,
            escape(scope),
            "[green]yes[/]" if card.admitted else "[yellow]no[/]",
            f"{ratio:.2f}x" if ratio else "-",
        )
    return table


def _print_json(payload: object) -> None:
    print(json.dumps(payload, indent=2))
