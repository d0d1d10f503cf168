"""Each stage exports a short, deliberate surface; changing it is a conscious act."""

from __future__ import annotations

from pathlib import Path

import klineage
import klineage.backends
import klineage.bench
import klineage.cli
import klineage.editors
import klineage.errors
import klineage.executors
import klineage.gate
import klineage.lineage
import klineage.mine
import klineage.optimize
import klineage.report
import klineage.runs
import klineage.skills
import klineage.source
import klineage.workload
import klineage.workload.flashinfer
import klineage.workload.kernelbench

EXPECTED = {
    klineage: ["__version__"],
    klineage.errors: ["BackendUnavailableError", "BrainError", "ComparisonFailed", "ConfigError",
                      "DegenerateWorkloadError", "GateWaiting",
                      "KlineageError", "LibraryError", "MachineLoadedError", "RunStopped",
                      "ToolchainError", "WorkerError",
                      "WorkloadError"],
    klineage.source: ["CATALOGUE", "CATEGORIES", "DEPENDS_ON", "Edit", "FAST_PATH_FEATURES", "FeatureHit",
                      "FeatureInfo", "Refused", "Site", "compiled_evidence", "detect", "feature_region",
                      "insertion", "insertion_edits", "present", "removal_edits", "removal_order",
                      "unified_diff"],
    klineage.executors: ["Executor", "LocalExecutor", "current", "executor_from", "using"],
    klineage.skills: ["Carrier", "Effect", "Evidence", "Finding", "Library", "Precondition", "Rewrite",
                      "Risk", "Scope", "SkillCard", "Trial", "skill_id", "to_skill_md"],
    klineage.mine: ["MineMeta", "MineOptions", "MineResult", "default_admission_workloads", "mine"],
    klineage.cli: ["app", "main"],
    klineage.workload: ["KernelLanguage", "KernelSpec", "KernelState", "LANGUAGES", "TensorSpec",
                        "Workload", "allocate_outputs", "check_not_degenerate", "generate_inputs",
                        "language_of_file", "load_kernel",
                        "load_reference", "load_workload", "poison_value", "run_reference"],
    klineage.gate: ["ClockCheck", "Comparison", "GateOptions", "GateReport", "GateSession", "Limits",
                    "SpeedOfLight", "StageResult", "TimingStats", "Verdict", "compare_kernels",
                    "free_threads", "others_load", "run_gate"],
    klineage.backends: ["ALLOWED_FLAGS_HELP", "BACKEND_NAMES", "Backend", "BuildResult", "Ceilings", "Device",
                        "backend_for", "get_backend"],
    klineage.editors: ["Answer", "EditContext", "Editor", "MeteredEditor", "Proposal", "Usage",
                       "get_editor", "keep_exchanges"],
    klineage.lineage: ["Lineage", "ProposalRejected", "Rederivation", "Rederived", "Rejection",
                       "StepAccepted", "Transition", "WalkLimits", "WalkStopped", "audit_removal",
                       "backward_walk", "rederive_lineage"],
    klineage.runs: ["Budget", "BudgetChanged", "Charge", "Event", "Meter", "Run", "RunDir",
                    "RunInterrupted", "RunMeta", "RunStarted", "Spent", "Usage", "check_resume",
                    "new_run_id", "resume_command"],
    klineage.report: ["ReportPaths", "write_report"],
    klineage.workload.kernelbench: ["ImportOutcome", "import_kernelbench", "problem_files"],
    klineage.workload.flashinfer: ["DefinitionOutcome", "import_flashinfer_bench"],
    klineage.optimize: ["CandidateGated", "DEFAULT_BUDGET", "METHODS", "MethodInputs",
                        "OptimizeFinished", "OptimizeMeta", "OptimizeOptions", "OptimizeResult",
                        "StartGated", "default_inputs", "optimize"],
    klineage.bench: ["BenchMeta", "BenchResult", "bench", "budget_to_fraction", "leave_one_out",
                     "resume_bench", "suite_workloads", "summarize", "without_workload"],
}


def test_exports_are_pinned():
    for module, names in EXPECTED.items():
        assert sorted(module.__all__) == names, module.__name__
        for name in names:
            assert hasattr(module, name)


def test_every_package_is_pinned():
    root = Path(klineage.__file__).parent
    packages = {f"klineage.{p.parent.name}" for p in root.glob("*/__init__.py")} | {"klineage"}
    assert packages <= {m.__name__ for m in EXPECTED}, packages - {m.__name__ for m in EXPECTED}
