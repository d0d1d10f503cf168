"""Reading answers: every unusable shape is a reason string, never an exception."""

from __future__ import annotations

import pytest

from klineage.editors._extract import Extracted, apply_unified_diff, extract_answer, extract_json
from klineage.editors._llm import check_feature

OLD = "int f(void) {\n    int a = 1;\n    int b = 2;\n    return a + b;\n}\n"
NEW = "int f(void) {\n    int a = 1;\n    int b = 3;\n    return a + b;\n}\n"


def test_whole_file_with_headers():
    text = ("I changed b.\n**FEATURE:** `restrict`\nFLAGS: -O3 -fopenmp\nTUNABLES: {\"factor\": 4}\n"
            f"```c\n{NEW}```\n")
    found = extract_answer(text, OLD)
    assert isinstance(found, Extracted)
    assert (found.source, found.feature, found.flags, found.tunables) == (NEW, "restrict",
                                                                          ("-O3", "-fopenmp"), {"factor": 4})
    assert found.rationale == "I changed b."


def test_unified_diff_applies_strictly_even_with_wrong_line_numbers():
    diff = ("--- a/kernel.c\n+++ b/kernel.c\n@@ -7,3 +7,3 @@\n"
            "     int a = 1;\n-    int b = 2;\n+    int b = 3;\n")
    assert apply_unified_diff(OLD, diff) == NEW
    found = extract_answer(f"FEATURE: unroll\n```diff\n{diff}```", OLD)
    assert isinstance(found, Extracted) and found.source == NEW


def test_a_diff_that_does_not_match_is_refused():
    diff = "@@ -2,2 +2,2 @@\n     int a = 7;\n-    int b = 2;\n+    int b = 3;\n"
    with pytest.raises(ValueError, match="hunk 1 does not match"):
        apply_unified_diff(OLD, diff)
    assert "does not match" in extract_answer(f"FEATURE: unroll\n```diff\n{diff}```", OLD)


@pytest.mark.parametrize(("text", "truncated", "reason"), [
    ("I would remove the pragma, it is simple.", False, "no code block"),
    ("", False, "empty"),
    (f"FEATURE: unroll\n```c\n{NEW}```\nand also\n```c\nint g;\n```", False, "2 code blocks"),
    (f"FEATURE: unroll\n```c\n{NEW[:30]}", True, "never closed (the answer looks cut off) (the reply hit"),
    (f"FEATURE: unroll\n```c\n{OLD}```", False, "does not change the kernel"),
    ("FEATURE: unroll\nTUNABLES: factor=4\n```c\nint x;\n```", False, "TUNABLES line is not a JSON"),
    ("FEATURE: unroll\n```c\n```", False, "empty"),
])
def test_unusable_answers_give_reasons(text, truncated, reason):
    found = extract_answer(text, OLD, truncated)
    assert isinstance(found, str) and reason in found


def test_feature_names_are_checked():
    assert check_feature(None, "remove", None, {"unroll"}).startswith("the answer has no FEATURE")
    assert "not a feature" in check_feature("go_faster", "remove", None, {"unroll"})
    assert "wrong feature" in check_feature("restrict", "insert", "unroll", None)
    assert "does not have" in check_feature("restrict", "remove", None, {"unroll"})
    assert check_feature("unroll", "remove", None, {"unroll"}) is None
    assert check_feature("my_trick", "improve", None, None) is None


def test_json_answers():
    assert extract_json('Sure:\n```json\n{"name": "x"}\n```') == {"name": "x"}
    assert extract_json('here {"name": "y"} done') == {"name": "y"}
    assert extract_json("no json") == "no JSON object in the answer"
