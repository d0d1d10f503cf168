"""``klineage demo``: the offline pipeline on the bundled CPU workloads.

Today the pipeline is the gate: every example's naive and expert kernel are gated, and the
expert is compared with the naive kernel by the paired, interleaved timing. Mining, the skill
library and optimization join this demo as they land (issues 4–6).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from klineage.errors import ConfigError
from klineage.gate import GateOptions, GateReport, run_gate
from klineage.workload import load_kernel, load_workload

__all__ = ["DemoResult", "default_examples", "run_demo"]


def default_examples() -> Path:
    """examples/workloads/cpu of the source checkout klineage runs from."""
    return Path(__file__).resolve().parents[2] / "examples" / "workloads" / "cpu"


@dataclass
class DemoResult:
    rows: list[tuple[str, GateReport, GateReport]] = field(default_factory=list)

    def all_accepted(self) -> bool:
        return all(n.accepted and e.accepted for _, n, e in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {"workloads": [{"workload": w, "naive": n.model_dump(mode="json"),
                               "expert": e.model_dump(mode="json")} for w, n, e in self.rows]}

    def table(self) -> Table:
        table = Table(title="klineage demo: naive vs expert under the gate")
        for column in ("workload", "naive", "expert", "naive ms", "expert ms", "speedup (paired)",
                       "expert % of bound"):
            table.add_column(column, justify="left" if column in ("workload",) else "right")
        for name, naive, expert in self.rows:
            c = expert.comparison
            sol = expert.sol
            table.add_row(
                name, naive.verdict.value, expert.verdict.value,
                f"{naive.timing.median_s * 1e3:.2f}" if naive.timing else "-",
                f"{expert.timing.median_s * 1e3:.2f}" if expert.timing else "-",
                f"{1 / c.ratio:.1f}x [{1 / c.ci_high:.1f}, {1 / c.ci_low:.1f}]" if c else "-",
                f"{sol.fraction * 100:.0f}% ({sol.limiter})" if sol and sol.fraction else "-",
            )
        return table

    def notes(self) -> list[str]:
        lines = []
        for name, naive, expert in self.rows:
            for report in (naive, expert):
                if not report.accepted:
                    lines.append(f"{name}/{report.kernel}: {report.verdict.value}: {report.reason}")
        return lines


def run_demo(examples: Path | None = None,
             on_progress: Callable[[str], None] | None = None) -> DemoResult:
    folder = examples or default_examples()
    if not folder.is_dir():
        raise ConfigError(f"{folder}: example workloads not found (run from a source checkout, "
                          f"or pass --examples)")
    say = on_progress or (lambda _: None)
    result = DemoResult()
    options = GateOptions()
    for workload_dir in sorted(p for p in folder.iterdir() if (p / "workload.toml").is_file()):
        workload = load_workload(workload_dir)
        naive, expert = load_kernel(workload, "naive"), load_kernel(workload, "expert")

        def show(stage: str, detail: str, name: str = workload.name) -> None:
            say(f"[bold]{name}[/] {stage}: {detail}")

        naive_report = run_gate(workload, naive, options=options, on_progress=show)
        expert_report = run_gate(workload, expert, options=options, on_progress=show,
                                 against=naive if naive_report.accepted else None)
        result.rows.append((workload.name, naive_report, expert_report))
    return result
