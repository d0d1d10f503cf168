"""Versioned prompt templates (``editors/prompts/<version>/*.md``) and what fills them.

Templates use ``string.Template`` placeholders (``$kernel``); a missing field is a bug and
raises. The version is recorded with every exchange (cassette records, charge events), so a
change of wording is a new version folder, never an edit of a released one.
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from string import Template
from typing import Any

from klineage.errors import KlineageError
from klineage.source import CATALOGUE, FeatureHit, detect
from klineage.workload import LANGUAGES, KernelState, Workload

__all__ = ["PROMPT_VERSION", "catalogue_text", "features_text", "kernel_fields", "machine_text",
           "render", "safe_detect", "workload_text"]

PROMPT_VERSION = "v2"
"""v2: improve and materialize show the machine and toolchain (so every method knows it may set
OpenMP and other flags), the gate's result on the kernel and every attempt on it; the method's
knowledge has one neutral heading (v1 printed "What you may use: (nothing)" for ``none``, and a
model took that as a ban); ``materialize_joint`` applies several cards in one version."""

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
            "machine": machine_text(state.language),
            "file_name": state.file_name, "kernel": state.source.rstrip("\n"),
            "flags_text": " ".join(state.flags) or "(none)", "workload": workload_text(workload),
            "features": features_text(safe_detect(state)), "catalogue": catalogue_text(state.language),
            "feedback": feedback.strip() or "(none)"}


@functools.cache
def machine_text(language: str) -> str:
    """Where the kernel is gated, and what the answer may change besides the source."""
    from klineage.backends import ALLOWED_FLAGS_HELP, backend_for

    try:
        backend = backend_for(language)
        where = backend.platform()
        tools = ", ".join(f"{k} {v}" for k, v in sorted(backend.toolchain().items()))
        base = backend.base_flags
    except KlineageError as exc:
        where, tools, base = f"unknown ({exc})", "unknown", ()
    lines = [f"- gate platform: {where}; toolchain: {tools}"]
    if base:
        lines.append(f"- every build gets {' '.join(base)} before the kernel's own flags")
    if language in ("c", "cpp"):
        lines.append(f"- {len(os.sched_getaffinity(0))} CPU cores; kernels are timed with all of "
                     "them unless their kernel.toml names a thread count; OpenMP is available "
                     "(add -fopenmp to the flags)")
    lines.append("- the compile flags are part of your answer (the FLAGS line): add or drop "
                 "flags as the kernel needs; what the tolerance allows decides whether "
                 "approximate math is sound")
    lines.append(f"- the gate refuses any other flag, naming it: kernels may give {ALLOWED_FLAGS_HELP}; "
                 "a build reads only the toolchain and the kernel's own folder")
    return "\n".join(lines)


def workload_text(workload: Workload) -> str:
    def tensor(t: Any) -> str:
        text = f"{t.name}: {t.dtype}[{', '.join(str(d) for d in t.shape)}]"
        if t.order == "free":
            text += " (each row in any order)"
        if t.indexes:
            source, _, values = t.indexes.partition(":")
            text += (f" (distinct positions in the same row of {source} where {source} equals "
                     f"{values}; ties may pick any)")
        return text

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
