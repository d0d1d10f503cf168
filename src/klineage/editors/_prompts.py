"""Versioned prompt templates (``editors/prompts/<version>/*.md``) and what fills them.

Templates use ``string.Template`` placeholders (``$kernel``); a missing field is a bug and
raises. The version is recorded with every exchange (cassette records, charge events), so a
change of wording is a new version folder, never an edit of a released one.
"""

from __future__ import annotations

from importlib import resources
from string import Template
from typing import Any

from klineage.source import CATALOGUE, FeatureHit, detect
from klineage.workload import LANGUAGES, KernelState, Workload

__all__ = ["PROMPT_VERSION", "catalogue_text", "features_text", "kernel_fields", "render",
           "safe_detect", "workload_text"]

PROMPT_VERSION = "v1"

FENCES = {name: lang.fence for name, lang in LANGUAGES.items()}


def _template(name: str, version: str) -> Template:
    path = resources.files("klineage.editors").joinpath("prompts", version, f"{name}.md")
    return Template(path.read_text())


def render(name: str, fields: dict[str, Any], version: str = PROMPT_VERSION,
           answer: str = "answer_format") -> tuple[str, str]:
    """(system prompt, user prompt) for template ``name``; ``answer`` names the answer-format
    part (``answer_format`` for chat models, ``agent_format`` for agent CLIs)."""
    values = {k: str(v) for k, v in fields.items()}
    if "language" in values:
        values["answer_format"] = _template(answer, version).substitute(values)
    return (_template("system", version).substitute({}).strip(),
            _template(name, version).substitute(values).strip() + "\n")


def safe_detect(state: KernelState) -> list[FeatureHit]:
    """Feature hits, or none where the detectors do not read the language (Triton)."""
    try:
        return detect(state.source, state.language)
    except Exception:  # a parser gap must not stop the brain from being asked
        return []


def kernel_fields(state: KernelState, workload: Workload, feedback: str = "") -> dict[str, Any]:
    return {"language": state.language, "fence": FENCES.get(state.language, ""),
            "file_name": state.file_name, "kernel": state.source.rstrip("\n"),
            "flags_text": " ".join(state.flags) or "(none)", "workload": workload_text(workload),
            "features": features_text(safe_detect(state)), "catalogue": catalogue_text(state.language),
            "feedback": feedback.strip() or "(none)"}


def workload_text(workload: Workload) -> str:
    def tensor(t: Any) -> str:
        return f"{t.name}: {t.dtype}[{', '.join(str(d) for d in t.shape)}]"

    lines = [f"name: {workload.name}; op: {workload.op}",
             f"description: {workload.description or '(none)'}",
             f"benchmark sizes: {', '.join(f'{k}={v}' for k, v in workload.axes.items())}",
             "also checked at: " + ("; ".join(", ".join(f"{k}={v}" for k, v in s.items())
                                            for s in workload.check_shapes) or "(no other sizes)"),
             f"params (in order): {', '.join(f'{k}={v:g}' for k, v in workload.params.items()) or '(none)'}",
             f"inputs (in order): {'; '.join(tensor(t) for t in workload.inputs)}",
             f"outputs (in order): {'; '.join(tensor(t) for t in workload.outputs)}",
             "tolerance: " + "; ".join(f"{o.name} rtol={r:g} atol={a:g}" for o in workload.outputs
                                       for r, a in [workload.tolerance_for(o)])]
    if workload.cost.bytes or workload.cost.flops:
        lines.append(f"cost: bytes = {workload.cost.bytes or '?'}; flops = {workload.cost.flops or '?'}")
    return "\n".join(f"- {line}" for line in lines)


def features_text(hits: list[FeatureHit]) -> str:
    if not hits:
        return "(none detected)"
    lines = []
    for hit in hits:
        info = CATALOGUE.get(hit.feature)
        where = hit.site.text.strip().splitlines()[0][:100] if hit.site.text.strip() else ""
        lines.append(f"- {hit.feature} ({info.category if info else '?'}), line {hit.site.start_line}"
                     f"{' in ' + hit.site.scope if hit.site.scope else ''}: `{where}`")
    return "\n".join(lines)


def catalogue_text(language: str) -> str:
    return "\n".join(f"- {name} ({info.category}): {info.description}"
                     for name, info in CATALOGUE.items() if language in info.languages)
