"""`klineage skills ...` through typer's CliRunner: tables, --json, exports, one-line errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from klineage.cli.skills import skills_app
from klineage.skills import Library

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture
def library(tmp_path, make_vector_card, make_omp_card):
    lib = Library.open(tmp_path / "library", create=True)
    lib.add(make_vector_card())
    lib.add(make_omp_card())
    return lib


def invoke(*args: str):
    return runner.invoke(skills_app, list(args))


def test_list_shows_admitted_cards_unless_all(library):
    result = invoke("list", "--library", str(library.root))
    assert result.exit_code == 0, result.output
    assert "Parallelize the row loop" in result.stdout and "Vectorize" not in result.stdout
    assert "1 card(s) not admitted yet; --all shows them." in result.stdout
    result = invoke("list", "--library", str(library.root), "--all")
    assert "Vectorize row loads" in result.stdout and "2.00x" in result.stdout


def test_list_json_is_the_index(library):
    result = invoke("list", "--library", str(library.root), "--all", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == library.index()


def test_show_by_prefix(library, make_vector_card):
    card = make_vector_card()
    result = invoke("show", card.id[:5], "--library", str(library.root))
    assert result.exit_code == 0, result.output
    for text in ("Vectorize row loads with float4", "When to apply", "N % 4 == 0", "Verification log"):
        assert text in result.stdout
    result = invoke("show", card.id, "--library", str(library.root), "--json")
    assert json.loads(result.stdout) == card.model_dump(mode="json")


def test_search_with_filters(library):
    result = invoke("search", "float4", "--library", str(library.root), "--json")
    assert [hit["feature"] for hit in json.loads(result.stdout)] == ["vectorized_access"]
    result = invoke("search", "--op", "softmax", "--language", "c", "--library", str(library.root),
                    "--json")
    assert [hit["feature"] for hit in json.loads(result.stdout)] == ["omp_parallel"]
    result = invoke("search", "rows", "--feature", "omp_parallel", "--library", str(library.root))
    assert result.exit_code == 0 and "1 match(es)" in result.stdout and "omp_parallel" in result.stdout


@pytest.mark.parametrize(("format", "expected"), [
    ("markdown", "README.md"),
    ("json", "skills.json"),
    ("agent-skills", "vectorize-row-loads-with-float4/SKILL.md"),
])
def test_export_every_format(library, tmp_path, format, expected):
    dest = tmp_path / "out"
    result = invoke("export", str(dest), "--format", format, "--all", "--library", str(library.root))
    assert result.exit_code == 0, result.output
    assert f"exported 2 skill(s) as {format}" in result.stdout
    assert (dest / expected).is_file()


def test_export_defaults_to_admitted_agent_skills(library, tmp_path):
    result = invoke("export", str(tmp_path / "out"), "--library", str(library.root), "--json")
    payload = json.loads(result.stdout)
    assert payload["format"] == "agent-skills" and payload["skills"] == 1
    assert payload["files"] == [str(tmp_path / "out" / "parallelize-the-row-loop-with-openmp" / "SKILL.md")]


def test_unknown_id_is_one_red_line_exit_2(library):
    result = invoke("show", "ffffffff", "--library", str(library.root))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no skill 'ffffffff'")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_missing_library_is_one_red_line_exit_2(tmp_path):
    narrow = CliRunner(env={"COLUMNS": "40"})
    result = narrow.invoke(skills_app, ["list", "--library", str(tmp_path / "none")])
    assert result.exit_code == 2 and result.stderr.startswith("error: no skill library at")
    assert result.stderr.count("\n") == 1
