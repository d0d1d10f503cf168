"""SKILL.md: a card as YAML front matter plus a Markdown body a person and a coding agent can read.

``skill.json`` is the machine record; this text is derived from it and never parsed back.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from klineage.skills.card import SkillCard
from klineage.workload import LANGUAGES

__all__ = ["code_language", "front_matter", "render_front_matter", "skill_body", "to_skill_md"]

_FENCE_LANGUAGE = {name: lang.fence for name, lang in LANGUAGES.items()}
_NOT_ADMITTED = "not admitted: a hypothesis until a kernel that did not produce it reproduces it"


def to_skill_md(card: SkillCard) -> str:
    """The whole SKILL.md of a card."""
    return render_front_matter(front_matter(card)) + "\n" + skill_body(card)


def front_matter(card: SkillCard) -> dict[str, Any]:
    """The YAML header fields of a library SKILL.md."""
    return {
        "name": card.name,
        "description": _one_line(card.intent),
        "id": card.id,
        "feature": card.feature,
        "category": card.category,
        "admitted": card.admitted,
        "requires": list(card.requires),
        "provides": list(card.provides),
        "conflicts": list(card.conflicts),
        "scope": card.scope.model_dump(),
    }


def render_front_matter(fields: dict[str, Any]) -> str:
    """A YAML front matter block, '---' fenced."""
    text = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{text}---\n"


def skill_body(card: SkillCard) -> str:
    """The Markdown body: intent, when, where, how, effect, risks, evidence, verification."""
    sections = [
        f"# {card.name}\n\n{_status_line(card)}",
        _intent(card),
        _when(card),
        f"## Where\n\n{card.anchor}",
        _how(card),
        _effect(card),
        _risks(card),
        _evidence(card),
        _verification(card),
    ]
    return "\n\n".join(sections) + "\n"


def code_language(card: SkillCard) -> str:
    """The fence language of the card's snippets ('' when unknown)."""
    languages = [lang for lang in card.scope.languages if lang != "*"]
    return _FENCE_LANGUAGE.get(languages[0], languages[0]) if languages else ""


def _status_line(card: SkillCard) -> str:
    status = "admitted" if card.admitted else _NOT_ADMITTED
    return f"`{card.id}` · feature `{card.feature}` · {card.category} · {status} · revision {card.version}"


def _intent(card: SkillCard) -> str:
    provides = f"\n\nAfterwards the kernel has: {_codes(card.provides)}." if card.provides else ""
    return f"## Intent\n\n{card.intent}{provides}"


def _when(card: SkillCard) -> str:
    scope = card.scope
    lines = [
        "## When to apply",
        "",
        f"- Ops: {_codes(scope.ops)}",
        f"- Languages: {_codes(scope.languages)}",
        f"- Platforms: {_codes(scope.platforms)}",
    ]
    if scope.prior_features:
        lines.append(f"- Seen in kernels that already had: {_codes(scope.prior_features)}")
    if card.requires:
        lines.append(f"- The kernel must already have: {_codes(card.requires)}")
    if card.conflicts:
        lines.append(f"- Do not apply where the kernel has: {_codes(card.conflicts)}")
    lines += ["", "Preconditions (each one held where the step was measured):", ""]
    if not card.preconditions:
        lines.append("- none recorded")
    for pre in card.preconditions:
        check = f" Check: `{pre.check}`." if pre.check else ""
        lines.append(f"- **{pre.category}**: {pre.condition}. Why: {pre.reason}.{check} "
                     f"_({pre.source})_")
    return "\n".join(lines)


def _how(card: SkillCard) -> str:
    carrier = card.carrier
    parts = [f"## How\n\n{carrier.summary}"]
    language = code_language(card)
    if carrier.before:
        parts.append("Before:\n\n" + _fenced(carrier.before, language))
    if carrier.after:
        parts.append("After:\n\n" + _fenced(carrier.after, language))
    if carrier.diff:
        parts.append("Diff:\n\n" + _fenced(carrier.diff, "diff"))
    if carrier.tunables:
        values = "\n".join(f"- `{name}` = `{value}`" for name, value in carrier.tunables.items())
        parts.append(f"Tunables (values that worked):\n\n{values}")
    if card.rewrite:
        params = ", ".join(f"{k}={v}" for k, v in card.rewrite.params.items()) or "no parameters"
        parts.append(f"Mechanical rewrite: pass `{card.rewrite.pass_name}` inserts "
                     f"`{card.rewrite.feature}` ({params}).")
    return "\n\n".join(parts)


def _effect(card: SkillCard) -> str:
    if not card.effect:
        return "## Measured effect\n\nNo measurements yet."
    header = ("| workload | shape | platform | before ms | after ms | speedup | speedup CI "
              "| SoL before | SoL after |")
    rows = [header, "|" + "---|" * 9]
    for e in card.effect:
        shape = ", ".join(f"{axis}={value}" for axis, value in e.shape.items())
        ci = f"{e.ci_low:.2f}–{e.ci_high:.2f}" if e.ci_low is not None and e.ci_high is not None else "-"
        cells = [e.workload, shape, e.platform, f"{e.before_ms:.4g}", f"{e.after_ms:.4g}",
                 f"{e.ratio:.2f}x", ci, _percent(e.sol_before), _percent(e.sol_after)]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    geomean = card.geomean_ratio()
    rows.append(f"\nGeometric mean speedup {geomean:.2f}x over {len(card.effect)} measurement(s).")
    return "## Measured effect\n\n" + "\n".join(rows)


def _risks(card: SkillCard) -> str:
    if not card.risk:
        return "## Risks\n\nNo failures recorded."
    lines = [f"- {risk.what} _(evidence: {risk.evidence})_" for risk in card.risk]
    return "## Risks\n\nFailures seen when the preconditions did not hold:\n\n" + "\n".join(lines)


def _evidence(card: SkillCard) -> str:
    transitions = _codes(card.evidence.transitions)
    reports = _codes(card.evidence.gate_reports)
    return f"## Evidence\n\n- Transitions: {transitions}\n- Gate reports: {reports}"


def _verification(card: SkillCard) -> str:
    if not card.verification:
        return "## Verification log\n\nNo trials yet."
    rows = ["| at | target | held out | verdict | speedup | reason |", "|" + "---|" * 6]
    for trial in card.verification:
        effect = f"{trial.effect_observed:.2f}x" if trial.effect_observed is not None else "-"
        cells = [trial.at, trial.target, "yes" if trial.held_out else "no", trial.verdict, effect,
                 trial.reason or "-"]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "## Verification log\n\n" + "\n".join(rows)


def _fenced(code: str, language: str) -> str:
    # A fence must be longer than any backtick run inside the snippet, or the snippet ends it.
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def _codes(items: list[str]) -> str:
    return ", ".join(f"`{item}`" for item in items) if items else "none"


def _percent(fraction: float | None) -> str:
    return f"{fraction * 100:.0f}%" if fraction is not None else "-"


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|")


def _one_line(text: str) -> str:
    return " ".join(text.split())
