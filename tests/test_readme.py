"""The README's promises: its two commands, and the CLI verbs it shows."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from conftest import REPO
from klineage.cli import app


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```(?:bash|console)\n(.*?)```", text, re.S)


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    first, second = _code_blocks(readme)[:2]
    assert "klineage demo" in first
    ci = (REPO / ".ci" / "run").read_text()
    assert second.strip() in ci


def test_every_verb_the_readme_shows_exists():
    readme = (REPO / "README.md").read_text()
    verbs = set(re.findall(r"\$ klineage (\w+)", readme)) | {"demo"}
    runner = CliRunner()
    for verb in verbs:
        result = runner.invoke(app, [verb, "--help"])
        assert result.exit_code == 0, (verb, result.output)
