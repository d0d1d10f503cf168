"""``klineage features``: a kernel's detected features, their sites, and compiled evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from klineage.backends import backend_for
from klineage.workload import KernelSpec

__all__ = ["feature_report"]


def feature_report(kernel: KernelSpec, compiled: bool = True) -> dict[str, Any]:
    from klineage.source import CATALOGUE, compiled_evidence, detect

    text = kernel.source.read_text()
    hits = detect(text, kernel.language)
    evidence: dict[str, bool] = {}
    build_note = ""
    if compiled:
        built = backend_for(kernel.language).build(kernel)
        if built.ok and built.artifact:
            evidence = compiled_evidence(Path(built.artifact), kernel.language)
        else:
            build_note = "the kernel does not compile: no compiled evidence"
    rows = []
    for hit in sorted(hits, key=lambda h: (h.site.start_line, h.feature)):
        info = CATALOGUE[hit.feature]
        rows.append({
            "feature": hit.feature, "category": info.category, "line": hit.site.start_line,
            "end_line": hit.site.end_line, "scope": hit.site.scope,
            "text": hit.site.text.strip().splitlines()[0] if hit.site.text.strip() else "",
            "detail": hit.detail,
            "compiled": evidence.get(hit.feature) if info.compiled_signature else None,
        })
    return {"kernel": str(kernel.source), "language": kernel.language, "features": rows,
            "present": sorted({r["feature"] for r in rows}), "note": build_note}
