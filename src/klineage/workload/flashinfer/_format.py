"""FlashInfer-Bench's records, as pydantic models written from its format documents
(docs/flashinfer_trace/{definition,workload,solution,trace}.md in flashinfer-ai/flashinfer-bench).

Unknown keys are kept (``extra="allow"``): the format grows, and a field klineage does not use
is no reason to refuse a dataset. ``Trace`` is strict about what it requires, since klineage
writes traces that FlashInfer-Bench must read back.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

__all__ = ["Axis", "Correctness", "Definition", "Environment", "Evaluation", "EvaluationStatus",
           "InputSource", "Performance", "Solution", "SourceFile", "Spec", "TensorDef", "Trace",
           "WorkloadEntry", "WorkloadRecord"]

_OPEN = ConfigDict(extra="allow")


class Axis(BaseModel):
    """A symbolic dimension: ``const`` with a value, or ``var`` (a Workload gives its value)."""

    model_config = _OPEN
    type: Literal["const", "var"]
    value: int | None = Field(default=None, description="Required for const axes.")
    description: str = ""

    @model_validator(mode="after")
    def _const_has_value(self) -> Axis:
        if self.type == "const" and self.value is None:
            raise ValueError("a const axis needs a value")
        return self


class TensorDef(BaseModel):
    """A named input or output: axis names as its shape (``None``: a Python scalar), a dtype."""

    model_config = _OPEN
    shape: list[str] | None
    dtype: str
    description: str = ""


class Definition(BaseModel):
    """One kernel's specification; ``reference`` is PyTorch source with a global ``run``."""

    model_config = _OPEN
    name: str
    op_type: str
    tags: list[str] = Field(default_factory=list)
    description: str = ""
    axes: dict[str, Axis]
    inputs: dict[str, TensorDef]
    outputs: dict[str, TensorDef]
    reference: str
    constraints: list[str] = Field(default_factory=list)


class InputSource(BaseModel):
    """Where one input's data comes from: ``random``, ``scalar`` (with ``value``) or
    ``safetensors`` (``path``, ``tensor_key``)."""

    model_config = _OPEN
    type: str
    value: int | float | bool | None = None
    path: str | None = None
    tensor_key: str | None = None


class WorkloadEntry(BaseModel):
    """Concrete values of a Definition's var axes and the source of each input."""

    model_config = _OPEN
    uuid: str
    axes: dict[str, int]
    inputs: dict[str, InputSource]

    @field_serializer("inputs")
    def _only_given(self, inputs: dict[str, InputSource]) -> dict[str, dict[str, Any]]:
        """Each source with the fields its type has (no ``"path": null`` on a random input)."""
        return {name: source.model_dump(mode="json", exclude_none=True) for name, source in inputs.items()}


class WorkloadRecord(BaseModel):
    """One line of a workloads JSONL file: a Trace with only definition and workload set."""

    model_config = _OPEN
    definition: str
    workload: WorkloadEntry
    solution: str | None = None
    evaluation: dict[str, Any] | None = None


class SourceFile(BaseModel):
    model_config = _OPEN
    path: str
    content: str


class Spec(BaseModel):
    """How a Solution is built and called; ``entry_point`` is ``FILE::FUNCTION``."""

    model_config = _OPEN
    language: str
    target_hardware: list[str] = Field(default_factory=list)
    dependencies: list[str] = Field(default_factory=list)
    entry_point: str
    build_commands: list[str] = Field(default_factory=list)


class Solution(BaseModel):
    """An implementation of one Definition: its sources and the entry point to call."""

    model_config = _OPEN
    name: str
    definition: str
    description: str = ""
    author: str
    spec: Spec
    sources: list[SourceFile]


class EvaluationStatus(StrEnum):
    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"


class Correctness(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_relative_error: float
    max_absolute_error: float


class Performance(BaseModel):
    model_config = ConfigDict(extra="forbid")
    latency_ms: float
    reference_latency_ms: float
    speedup_factor: float = Field(description="reference_latency_ms / latency_ms")


class Environment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hardware: str
    libs: dict[str, str]


class Evaluation(BaseModel):
    """One benchmark result; which of correctness and performance are set follows ``status``."""

    model_config = ConfigDict(extra="forbid")
    status: EvaluationStatus
    log_file: str
    correctness: Correctness | None
    performance: Performance | None
    environment: Environment
    timestamp: str = Field(description="ISO 8601")

    @model_validator(mode="after")
    def _nullable_by_status(self) -> Evaluation:
        wants_correctness = self.status in (EvaluationStatus.PASSED, EvaluationStatus.INCORRECT_NUMERICAL)
        wants_performance = self.status is EvaluationStatus.PASSED
        if (self.correctness is not None) != wants_correctness:
            raise ValueError(f"status {self.status.value}: correctness must be "
                             f"{'set' if wants_correctness else 'null'}")
        if (self.performance is not None) != wants_performance:
            raise ValueError(f"status {self.status.value}: performance must be "
                             f"{'set' if wants_performance else 'null'}")
        return self


class Trace(BaseModel):
    """One benchmark run of a Solution on one Workload of a Definition."""

    model_config = ConfigDict(extra="forbid")
    definition: str
    solution: str
    workload: WorkloadEntry
    evaluation: Evaluation
