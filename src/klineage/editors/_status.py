"""Which brains can be used here, and why not: for ``klineage doctor``. Never prints a key."""

from __future__ import annotations

import importlib.util
import shutil

from klineage import settings
from klineage.config import ApiConfig, Config
from klineage.editors._prices import price_for

__all__ = ["brain_status"]

_KEY_NAMES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def brain_status(config: Config) -> dict[str, str]:
    status = {"rules": "ok: offline and deterministic (source passes)"}
    for provider in ("openai", "anthropic"):
        status[provider] = _api_status(provider, getattr(config.brains, provider), config)
    agent = config.brains.agent
    found = shutil.which(agent.command[0])
    status["agent"] = (f"ok: {' '.join(agent.command)} ({found}), time limit {agent.time_limit_s:g}s"
                       if found else f"unusable: {agent.command[0]!r} is not on PATH "
                                     "(set brains.agent.command)")
    status["replay"] = "ok: serves a cassette offline (--replay PATH; record with --record PATH)"
    return status


def _api_status(provider: str, api: ApiConfig, config: Config) -> str:
    if importlib.util.find_spec(provider) is None:
        return f"unusable: the {provider} SDK is not installed (pip install 'klineage[llm]')"
    if not api.model:
        return f"unusable: no model (brains.{provider}.model or KLINEAGE_{provider.upper()}_MODEL)"
    key = _KEY_NAMES[provider]
    if settings.api_key(provider):
        auth = f"{key} set"
    elif api.base_url:
        auth = f"{key} not set (not needed by most local servers)"
    else:
        return f"unusable: {key} not set (or point brains.{provider}.base_url at a local server)"
    where = api.base_url or f"the {provider} API"
    price = price_for(api.model, config)
    cost = (f"${price.input_per_mtok:g}/${price.output_per_mtok:g} per Mtok in/out" if price
            else "no price for this model: dollars are not counted")
    return f"ok: {api.model} at {where}; {auth}; {cost}"
