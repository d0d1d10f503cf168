"""Dollars per call: the packaged price table (``prices.toml``), overridden by ``klineage.toml``."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources

from klineage.config import Config, Price

__all__ = ["call_cost", "price_for"]


@cache
def _packaged() -> dict[str, Price]:
    text = resources.files("klineage.editors").joinpath("prices.toml").read_text()
    return {name: Price(**entry) for name, entry in tomllib.loads(text)["prices"].items()}


def price_for(model: str, config: Config) -> Price | None:
    """The configured price, else the packaged one, else None (the call counts as free)."""
    return config.prices.get(model) or _packaged().get(model)


def call_cost(price: Price | None, input_tokens: int, output_tokens: int, cached_tokens: int) -> float:
    """``input_tokens`` includes the cached ones (both APIs' convention once normalised)."""
    if price is None:
        return 0.0
    cached_rate = price.input_per_mtok if price.cached_per_mtok is None else price.cached_per_mtok
    fresh = max(input_tokens - cached_tokens, 0)
    return (fresh * price.input_per_mtok + cached_tokens * cached_rate
            + output_tokens * price.output_per_mtok) / 1e6
