"""Gate reports on an imported workload, written back as FlashInfer-Bench Trace records
(``klineage export flashinfer-trace``).

One record per gate report, for the Definition's timed Workload (the one ``[axes]`` holds,
the first of the dataset's): the gate times that size only, and a Trace's performance belongs
to one Workload. The gate's correctness covers every Workload (each is a check shape), so a
PASSED record means correct on all of them; ``max_*_error`` are the largest float errors over
every checked call. ``reference_latency_ms`` is measured here, as the format asks: the
Definition's reference on inputs klineage draws at the timed sizes, on the gate's device,
the median of several calls.

Verdicts to statuses: accepted and slower → PASSED; incorrect → INCORRECT_NUMERICAL (a kernel
writes into buffers klineage shaped, so shape and dtype cannot be wrong); compile_error →
COMPILE_ERROR; crashed, timeout, rejected_cheat → RUNTIME_ERROR (the log file says which).
A report without timing (``--no-profile``, unmeasurable) is refused: PASSED needs a latency.
"""

from __future__ import annotations

import json
from pathlib import Path

from klineage import __version__
from klineage.errors import ConfigError
from klineage.gate.report import GateReport, Verdict
from klineage.workload import load_workload
from klineage.workload.flashinfer._format import (
    Correctness,
    Environment,
    Evaluation,
    EvaluationStatus,
    Performance,
    Trace,
    WorkloadEntry,
)
from klineage.workload.flashinfer._write import SIDECAR
from klineage.workload.model import Workload
from klineage.workload.reference import reference_ms

__all__ = ["traces_for"]

_STATUS = {Verdict.ACCEPTED: EvaluationStatus.PASSED, Verdict.SLOWER: EvaluationStatus.PASSED,
           Verdict.INCORRECT: EvaluationStatus.INCORRECT_NUMERICAL,
           Verdict.COMPILE_ERROR: EvaluationStatus.COMPILE_ERROR,
           Verdict.CRASHED: EvaluationStatus.RUNTIME_ERROR, Verdict.TIMEOUT: EvaluationStatus.RUNTIME_ERROR,
           Verdict.REJECTED_CHEAT: EvaluationStatus.RUNTIME_ERROR}


def traces_for(workload_dir: Path, report_files: list[Path], reference_calls: int = 5) -> list[Trace]:
    """One Trace per gate report (each file holds a report or a list of them, as ``klineage gate
    --json`` prints), checked against the format before it is returned."""
    sidecar_path = workload_dir / SIDECAR
    if not sidecar_path.is_file():
        raise ConfigError(f"{workload_dir}: no {SIDECAR}; import the workload with "
                          f"`klineage import flashinfer-bench` first")
    sidecar = json.loads(sidecar_path.read_text())
    workload = load_workload(workload_dir)
    timed = next(w for w in sidecar["workloads"] if w["uuid"] == sidecar["timed"])
    eager_ms: dict[str, float] = {}
    traces = []
    for path in report_files:
        for report in _reports(path):
            _check_belongs(report, workload, path)
            status = _STATUS.get(report.verdict)
            if status is None or (status is EvaluationStatus.PASSED and report.timing is None):
                raise ConfigError(f"{path}: kernel {report.kernel} was {report.verdict.value} with no "
                                  f"timing; a PASSED trace needs a latency (gate without --no-profile)")
            performance = None
            if status is EvaluationStatus.PASSED and report.timing is not None:
                device = "cpu" if report.backend == "cpu" else "cuda"
                if device not in eager_ms:
                    eager_ms[device] = reference_ms(workload, device, reference_calls)
                latency = report.timing.median_s * 1e3
                performance = Performance(latency_ms=latency, reference_latency_ms=eager_ms[device],
                                          speedup_factor=eager_ms[device] / latency)
            evaluation = Evaluation(
                status=status, log_file=str(path), correctness=_correctness(report, status),
                performance=performance, environment=_environment(report),
                timestamp=report.created_at)
            solution = sidecar.get("solutions", {}).get(report.kernel, report.kernel)
            traces.append(Trace(definition=sidecar["definition"], solution=solution,
                                workload=WorkloadEntry.model_validate(timed), evaluation=evaluation))
    return traces


def _reports(path: Path) -> list[GateReport]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a gate report ({exc})") from exc
    return [GateReport.model_validate(r) for r in (data if isinstance(data, list) else [data])]


def _check_belongs(report: GateReport, workload: Workload, path: Path) -> None:
    if report.workload_fingerprint != workload.fingerprint():
        raise ConfigError(f"{path}: kernel {report.kernel} was gated on another {report.workload} "
                          f"(an edited workload, or --quick sizes); gate it on {workload.root} as it is")


def _correctness(report: GateReport, status: EvaluationStatus) -> Correctness | None:
    if status not in (EvaluationStatus.PASSED, EvaluationStatus.INCORRECT_NUMERICAL):
        return None
    stage = next((s for s in report.stages if s.name == "correctness"), None)
    errors = stage.data.get("max_errors") if stage else None
    if not errors:
        raise ConfigError(f"kernel {report.kernel}: the report has no correctness errors (a gate "
                          f"from before klineage recorded them); gate it again")
    return Correctness(max_relative_error=errors["relative"], max_absolute_error=errors["absolute"])


def _environment(report: GateReport) -> Environment:
    libs = {"klineage": report.klineage_version or __version__, **report.toolchain}
    try:
        import torch
        libs["torch"] = torch.__version__
    except ImportError:
        pass
    return Environment(hardware=report.platform, libs=libs)
