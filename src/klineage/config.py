"""``klineage.toml``: which brain proposes edits, how to reach it, and what tokens cost.

Looked up as ``--config PATH``, else ``KLINEAGE_CONFIG``, else ``./klineage.toml``, else defaults.
Environment variables (read in ``settings.py``) override the file: ``KLINEAGE_BRAIN``,
``OPENAI_BASE_URL``, ``KLINEAGE_OPENAI_MODEL``, ``ANTHROPIC_BASE_URL``, ``KLINEAGE_ANTHROPIC_MODEL``.
API keys come only from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``: a key is never read from, or
written to, a file klineage owns.

    [brain]
    name = "openai"                 # rules | openai | anthropic | agent | replay

    [brains.openai]
    base_url = "http://localhost:8000/v1"
    model = "Qwen/Qwen2.5-Coder-32B-Instruct"
    temperature = 0.2
    max_tokens = 8192
    timeout_s = 120
    retries = 3

    [brains.agent]
    command = ["claude", "-p"]
    time_limit_s = 900

    [prices."my-model"]
    input_per_mtok = 1.0
    output_per_mtok = 4.0
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from klineage import settings
from klineage.errors import ConfigError

__all__ = ["BRAINS", "AgentConfig", "ApiConfig", "Config", "Price", "load_config"]

BRAINS = ("rules", "openai", "anthropic", "agent", "replay")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApiConfig(_Strict):
    """How to reach one LLM API."""

    base_url: str | None = Field(default=None, description="None: the provider's own endpoint")
    model: str = ""
    temperature: float = Field(default=0.2, ge=0, le=2)
    max_tokens: int = Field(default=8192, ge=16)
    timeout_s: float = Field(default=300.0, gt=0, description="Per request, not per run")
    retries: int = Field(default=3, ge=0, le=20, description="On 429, 5xx and dropped connections")


class AgentConfig(_Strict):
    """An agent CLI run in a scratch folder holding only the kernel, the workload and gate.sh."""

    command: list[str] = Field(default_factory=lambda: ["claude", "-p"], min_length=1)
    prompt_via: Literal["argv", "stdin"] = Field(
        default="argv", description="argv: the prompt is the last argument; stdin: piped in")
    time_limit_s: float = Field(default=900.0, gt=0)


class Price(_Strict):
    """US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_per_mtok: float | None = Field(default=None, ge=0,
                                          description="None: cached input costs as much as input")


class BrainChoice(_Strict):
    name: Literal["rules", "openai", "anthropic", "agent", "replay"] = "rules"


class Brains(_Strict):
    openai: ApiConfig = Field(default_factory=lambda: ApiConfig(model="gpt-4o"))
    anthropic: ApiConfig = Field(default_factory=lambda: ApiConfig(model="claude-sonnet-4-20250514"))
    agent: AgentConfig = Field(default_factory=AgentConfig)


class Config(_Strict):
    """The resolved configuration (file, then environment on top)."""

    brain: BrainChoice = Field(default_factory=BrainChoice)
    brains: Brains = Field(default_factory=Brains)
    prices: dict[str, Price] = Field(default_factory=dict)
    source: str = Field(default="defaults", description="Where the file part came from")


def load_config(path: Path | None = None) -> Config:
    """The configuration: ``path``, ``KLINEAGE_CONFIG``, ``./klineage.toml`` or defaults, plus env."""
    explicit = path or settings.config_path()
    found = explicit or (Path("klineage.toml") if Path("klineage.toml").is_file() else None)
    data: dict = {}
    if found is not None:
        if not found.is_file():
            raise ConfigError(f"{found}: no such configuration file")
        try:
            data = tomllib.loads(found.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{found}: not valid TOML: {exc}") from None
        data["source"] = str(found)
    _environment_overrides(data)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_one_line(found, exc)) from None


def _environment_overrides(data: dict) -> None:
    brains = data.setdefault("brains", {})
    if settings.brain_name() and isinstance(data.setdefault("brain", {}), dict):
        data["brain"]["name"] = settings.brain_name()
    if not isinstance(brains, dict):
        return  # validation names the mistake
    for provider, base_url, model in (("openai", settings.openai_base_url(), settings.openai_model()),
                                      ("anthropic", settings.anthropic_base_url(),
                                       settings.anthropic_model())):
        section = brains.get(provider)
        if isinstance(section, dict):
            section.setdefault("model", getattr(Brains(), provider).model)
        elif base_url or model:
            section = brains[provider] = dict(Brains().model_dump()[provider])
        if base_url:
            section["base_url"] = base_url
        if model:
            section["model"] = model


def _one_line(found: Path | None, exc: ValidationError) -> str:
    where = str(found) if found else "configuration (environment)"
    mistakes = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"])
        mistakes.append(f"{field}: {error['msg']}")
    return f"{where}: " + "; ".join(mistakes)
