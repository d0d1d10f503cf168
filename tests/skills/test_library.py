"""The library folder: add and merge, lookup by prefix, search and filters, index, trials, atomicity."""

from __future__ import annotations

import json
import os

import pytest

from klineage.errors import LibraryError
from klineage.skills import Effect, Library, Trial


def tmp_files(root):
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


@pytest.fixture
def library(tmp_path, make_vector_card, make_omp_card):
    lib = Library.open(tmp_path / "library", create=True)
    lib.add(make_vector_card())
    lib.add(make_omp_card())
    return lib


def test_open_needs_a_library_unless_asked_to_create(tmp_path):
    with pytest.raises(LibraryError, match="no skill library at"):
        Library.open(tmp_path / "nowhere")
    lib = Library.open(tmp_path / "new", create=True)
    assert lib.cards() == [] and lib.index() == []
    assert json.loads((tmp_path / "new" / "index.json").read_text())["schema_version"] == 1
    assert Library.open(tmp_path / "new").root == tmp_path / "new"


def test_add_writes_both_files_and_the_index(library, make_vector_card, make_omp_card):
    vector, omp = make_vector_card(), make_omp_card()
    folder = library.skills_dir / vector.id
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md", "skill.json"]
    assert (folder / "SKILL.md").read_text().startswith("---\nname: Vectorize row loads")
    assert library.ids() == sorted([vector.id, omp.id])
    entries = {entry["id"]: entry for entry in library.index()}
    assert entries[vector.id] == {
        "id": vector.id, "name": vector.name, "feature": "vectorized_access", "category": "memory",
        "ops": ["rmsnorm"], "languages": ["cuda"], "platforms": ["nvidia-sm90*"], "admitted": False,
        "geomean_ratio": pytest.approx(2.0),
    }
    assert entries[omp.id]["admitted"] is True
    assert tmp_files(library.root) == []


def test_adding_again_merges_and_writes_only_news(library, make_vector_card):
    card = make_vector_card()
    before = (library.skills_dir / card.id / "skill.json").stat().st_mtime_ns
    assert library.add(card) == card
    assert (library.skills_dir / card.id / "skill.json").stat().st_mtime_ns == before
    extra = Effect(workload="layernorm", shape={"N": 8192}, platform="nvidia-sm90-cuda13.0",
                   before_ms=0.5, after_ms=0.4)
    stored = library.add(make_vector_card(effect=[extra], admitted=True))
    assert stored.version == 2 and stored.admitted
    assert [e.workload for e in library.get(card.id).effect] == ["rmsnorm", "layernorm"]
    assert {e["id"]: e["admitted"] for e in library.index()}[card.id] is True
    assert tmp_files(library.root) == []


def test_get_by_unique_prefix(library, make_vector_card):
    card = make_vector_card()
    assert library.get(card.id[:4]) == card
    assert library.get(card.id.upper()) == card
    with pytest.raises(LibraryError, match="no skill 'ffff-nope'"):
        library.get("ffff-nope")
    with pytest.raises(LibraryError, match="no skill ''"):
        library.get("")


def test_ambiguous_prefix_is_a_clear_error(tmp_path, make_vector_card):
    lib = Library.open(tmp_path / "lib", create=True)
    lib.add(make_vector_card(id="abc000000001"))
    lib.add(make_vector_card(id="abc000000002"))
    with pytest.raises(LibraryError, match=r"'abc' matches 2 skills .*give more of the id"):
        lib.get("abc")
    assert lib.get("abc000000002").id == "abc000000002"


def test_cards_and_admitted_filter(library):
    assert len(library.cards()) == 2
    assert [c.feature for c in library.cards(admitted_only=True)] == ["omp_parallel"]


def test_search_by_words(library):
    assert [c.feature for c in library.search("FLOAT4 row")] == ["vectorized_access"]
    assert [c.feature for c in library.search("openmp")] == ["omp_parallel"]  # via a precondition
    assert library.search("float4 openmp") == []
    # Admitted first, then by speedup.
    assert [c.feature for c in library.search("")] == ["omp_parallel", "vectorized_access"]


def test_search_filters_honour_wildcard_scopes(library):
    assert [c.feature for c in library.search(feature="Vectorized_Access")] == ["vectorized_access"]
    assert [c.feature for c in library.search(op="softmax")] == ["omp_parallel"]  # ops ["*"]
    assert len(library.search(op="rmsnorm")) == 2
    assert [c.feature for c in library.search(language="cpp")] == ["omp_parallel"]
    assert [c.feature for c in library.search(platform="nvidia-sm90-cuda13.0")] == ["vectorized_access"]
    assert library.search(platform="nvidia-sm80-cuda13.0") == []
    assert library.search("row", op="rmsnorm", admitted_only=True)[0].feature == "omp_parallel"


def test_record_trial_persists_and_keeps_failures_as_risk(library, make_vector_card):
    card = make_vector_card()
    failed = Trial(target="layernorm/naive", held_out=True, verdict="crashed", reason="illegal address")
    library.record_trial(card.id[:6], failed)
    stored = library.get(card.id)
    assert stored.verification == [failed]
    assert stored.risk[-1].what == "crashed on layernorm/naive: illegal address"
    assert "illegal address" in (library.skills_dir / card.id / "SKILL.md").read_text()
    assert not stored.admitted  # admission is the caller's decision


def test_a_failed_write_keeps_the_old_file_and_no_temporary(library, make_vector_card, monkeypatch):
    card = make_vector_card()
    path = library.skills_dir / card.id / "skill.json"
    old = path.read_text()

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        library.record_trial(card.id, Trial(target="x/y", held_out=True, verdict="accepted"))
    assert path.read_text() == old
    assert tmp_files(library.root) == []


def test_a_damaged_card_is_one_clear_error(library, make_vector_card):
    card = make_vector_card()
    (library.skills_dir / card.id / "skill.json").write_text('{"id": "x"}')
    with pytest.raises(LibraryError, match=r"damaged skill card \(id: ") as info:
        library.get(card.id)
    assert "\n" not in str(info.value)
