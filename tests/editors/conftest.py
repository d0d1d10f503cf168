"""A loopback LLM server per test and configurations pointing the API brains at it."""

from __future__ import annotations

import pytest

from editors.fake_llm import FakeLLM
from klineage.config import ApiConfig, Brains, Config, Price

SECRET = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK"


@pytest.fixture
def fake_llm():
    server = FakeLLM()
    yield server
    server.stop()


def config_for(url: str, timeout_s: float = 10.0, retries: int = 2) -> Config:
    return Config(brains=Brains(
        openai=ApiConfig(base_url=f"{url}/v1", model="fake-gpt", timeout_s=timeout_s, retries=retries),
        anthropic=ApiConfig(base_url=url, model="fake-claude", timeout_s=timeout_s, retries=retries)),
        prices={"fake-gpt": Price(input_per_mtok=1.0, output_per_mtok=2.0, cached_per_mtok=0.5),
                "fake-claude": Price(input_per_mtok=3.0, output_per_mtok=15.0)})


@pytest.fixture
def secret_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    return SECRET
