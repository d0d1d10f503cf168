"""Parsing: the __align__ patch keeps byte offsets, and the walking helpers find what they say."""

from __future__ import annotations

import pytest

from klineage.source.parse import (
    Splice,
    enclosing_function,
    for_loops,
    function_definitions,
    function_name,
    parse,
    pragma_text,
    pragmas,
)

CUDA = """struct __align__(16) Pair { float a, b; };
__global__ void __launch_bounds__(256) scale(float* __restrict__ y, int n) {
#pragma unroll 4
  for (int i = 0; i < n; ++i) y[i] *= 2.0f;
}
"""


def test_align_rewrite_keeps_offsets_and_original_text():
    parsed = parse(CUDA, "cuda")
    assert not parsed.root.has_error
    assert parsed.text == CUDA  # the original, not the patched text
    loop = for_loops(parsed.root)[0]
    assert parsed.text_of(loop).startswith("for (int i = 0")
    assert parsed.site(loop).start_line == 4


def test_pragmas_functions_and_scopes():
    parsed = parse(CUDA, "cuda")
    assert [pragma_text(p) for p in pragmas(parsed.root)] == ["unroll 4"]
    assert [function_name(f) for f in function_definitions(parsed.root)] == ["scale"]
    loop = for_loops(parsed.root)[0]
    assert enclosing_function(loop) == "scale"
    assert parsed.site(loop).scope == "scale"


def test_c_parses_and_unknown_language_is_refused():
    assert not parse("int f(int* restrict p) { return *p; }", "c").root.has_error
    with pytest.raises(ValueError, match="triton"):
        parse("x", "triton")


def test_splice_deletes_whole_lines_and_skips_nested_changes():
    data = b"a\n  #pragma x\nb\n"
    splice = Splice(data)
    splice.delete_lines(data.index(b"#"), data.index(b"x") + 1)
    splice.replace(data.index(b"x"), data.index(b"x") + 1, "y")  # inside the deleted line
    assert splice.apply() == "a\nb\n"
