"""klineage.toml, environment overrides, prices, doctor's brains section, CLI user errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from editors.conftest import SECRET
from klineage.config import load_config
from klineage.doctor import _brains
from klineage.editors import get_editor
from klineage.editors._prices import call_cost, price_for
from klineage.errors import ConfigError

GOOD = """
[brain]
name = "openai"

[brains.openai]
base_url = "http://localhost:8000/v1"
model = "qwen-coder"
temperature = 0.0
retries = 5

[brains.agent]
command = ["codex", "exec"]
time_limit_s = 600

[prices."qwen-coder"]
input_per_mtok = 0.5
output_per_mtok = 1.5
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("KLINEAGE_BRAIN", "KLINEAGE_CONFIG", "OPENAI_BASE_URL", "KLINEAGE_OPENAI_MODEL",
                 "ANTHROPIC_BASE_URL", "KLINEAGE_ANTHROPIC_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_file_then_environment(tmp_path, monkeypatch):
    path = tmp_path / "klineage.toml"
    path.write_text(GOOD)
    config = load_config(path)
    assert config.brain.name == "openai" and config.brains.openai.retries == 5
    assert config.brains.agent.command == ["codex", "exec"]
    assert config.brains.anthropic.model  # untouched sections keep their defaults
    monkeypatch.setenv("KLINEAGE_BRAIN", "anthropic")
    monkeypatch.setenv("KLINEAGE_OPENAI_MODEL", "other")
    monkeypatch.chdir(tmp_path)  # found as ./klineage.toml
    config = load_config()
    assert (config.brain.name, config.brains.openai.model) == ("anthropic", "other")
    assert config.brains.openai.base_url == "http://localhost:8000/v1"


def test_every_mistake_is_named_on_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[brain]\nname = "gpt"\n[brains.openai]\ntemperature = "hot"\ncolour = 1\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    assert "brain.name" in message and "brains.openai.temperature" in message
    assert "brains.openai.colour" in message
    path.write_text("[brain\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "missing.toml")


def test_prices_from_the_package_and_from_the_file(tmp_path):
    path = tmp_path / "klineage.toml"
    path.write_text(GOOD)
    config = load_config(path)
    assert price_for("qwen-coder", config).input_per_mtok == 0.5
    assert price_for("gpt-4o", config).output_per_mtok > 0
    assert price_for("no-such-model", config) is None
    price = price_for("gpt-4o", config)
    expected = (1e6 - 2e5) * price.input_per_mtok / 1e6 + 2e5 * price.cached_per_mtok / 1e6 \
        + 1e5 * price.output_per_mtok / 1e6
    assert call_cost(price, 1_000_000, 100_000, 200_000) == pytest.approx(expected)


def test_api_brains_need_a_key_or_a_local_server(monkeypatch):
    config = load_config()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        get_editor("openai", config)
    with pytest.raises(ConfigError, match="unknown brain 'gpt'"):
        get_editor("gpt", config)
    with pytest.raises(ConfigError, match="needs --replay"):
        get_editor("replay", config)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert get_editor("openai", load_config()).name == "openai"  # local servers need no key


def test_doctor_says_which_brains_are_usable_without_showing_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    facts = _brains(None)
    assert facts["brain rules"].startswith("ok")
    assert facts["brain openai"].startswith("unusable: OPENAI_API_KEY not set")
    assert "ANTHROPIC_API_KEY set" in facts["brain anthropic"]
    assert SECRET not in json.dumps(facts)
    path = tmp_path / "klineage.toml"
    path.write_text(GOOD)
    facts = _brains(path)
    assert "qwen-coder at http://localhost:8000/v1" in facts["brain openai"]
    assert facts["brain agent"].startswith("unusable: 'codex' is not on PATH")


def test_cli_mine_with_a_bad_budget_or_missing_key_is_one_red_line(tmp_path):
    env = {**os.environ, "KLINEAGE_CACHE_DIR": str(tmp_path / "cache"), "OPENAI_API_KEY": ""}
    for args, expected in ((["--budget", "usd=lots"], "--budget"),
                           (["--brain", "openai"], "OPENAI_API_KEY")):
        proc = subprocess.run([sys.executable, "-m", "klineage.cli", "mine", str(FIXTURES / "axpy"),
                               "--runs", str(tmp_path / "runs"), *args], capture_output=True,
                              text=True, timeout=120, env=env, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error:") and expected in proc.stderr
        assert "Traceback" not in proc.stderr


def test_cli_replay_miss_is_one_red_line_and_the_run_is_kept(tmp_path):
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text("")
    env = {**os.environ, "KLINEAGE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "klineage.cli", "mine", str(FIXTURES / "axpy"),
                           "--runs", str(tmp_path / "runs"), "--brain", "openai", "--replay",
                           str(cassette), "--json"], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: cassette") and "--resume" in proc.stderr
    [run] = (tmp_path / "runs").iterdir()
    assert json.loads((run / "run.json").read_text())["brain"] == "openai"
