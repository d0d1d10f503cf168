"""Every record klineage writes into a run folder or library, as JSON Schemas (``klineage schemas``).

The models belong to their producers; the command line (the top layer) gathers them, importing each so
that every kind of event has registered itself.
"""

from __future__ import annotations

from typing import Any

__all__ = ["record_schemas"]


def record_schemas() -> dict[str, dict[str, Any]]:
    """name -> JSON Schema: gate reports, lineages, skill cards, a library's findings.json,
    optimize.json, bench.json, the memory baseline's memory.json, one
    run.json per kind of run, and one per kind of event in events.jsonl."""
    import klineage.bench
    import klineage.demo
    import klineage.mine
    import klineage.optimize  # noqa: F401 - each registers its run record and events
    from klineage.bench.records import BenchRecord
    from klineage.gate import GateReport
    from klineage.lineage import Lineage
    from klineage.optimize.memory import MemoryStore
    from klineage.optimize.records import OptimizeRecord
    from klineage.runs import Event, RunMeta
    from klineage.skills import SkillCard
    from klineage.skills.findings import FindingsFile

    schemas = {"gate-report": GateReport.model_json_schema(), "lineage": Lineage.model_json_schema(),
               "skill-card": SkillCard.model_json_schema(), "optimize": OptimizeRecord.model_json_schema(),
               "bench": BenchRecord.model_json_schema(), "memory": MemoryStore.model_json_schema(),
               "findings": FindingsFile.model_json_schema()}
    schemas.update({f"run-{tag}": schema for tag, schema in RunMeta.schemas().items()})
    schemas.update({f"event-{tag}": schema for tag, schema in Event.schemas().items()})
    return schemas
