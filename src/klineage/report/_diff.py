"""Unified diffs for display: read a backward (removal) diff forward, and classify its lines."""

from __future__ import annotations

import re

__all__ = ["diff_lines", "reverse_diff"]

_HUNK = re.compile(r"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$")


def reverse_diff(text: str) -> str:
    """The same change read the other way: old and new sides swapped.

    Only for display: a lineage step removes a feature (expert side is ``-``); shown in a
    naive → expert chain it reads better as the edit that adds the feature.
    """
    out = []
    for line in text.splitlines():
        hunk = _HUNK.match(line)
        if line.startswith("--- "):
            out.append("+++ " + line[4:])
        elif line.startswith("+++ "):
            out.append("--- " + line[4:])
        elif hunk:
            out.append(f"@@ -{hunk.group(2)} +{hunk.group(1)} @@{hunk.group(3)}")
        elif line.startswith("-"):
            out.append("+" + line[1:])
        elif line.startswith("+"):
            out.append("-" + line[1:])
        else:
            out.append(line)
    if len(out) >= 2 and out[0].startswith("+++ ") and out[1].startswith("--- "):
        out[0], out[1] = out[1], out[0]  # the old side's header comes first
    return "\n".join(_removals_first(out)) + ("\n" if text.endswith("\n") else "")


def _removals_first(lines: list[str]) -> list[str]:
    """In each block of changed lines, the '-' lines before the '+' lines, as diff tools print."""
    result: list[str] = []
    block: list[str] = []
    for line in [*lines, None]:
        if line and line[0] in "+-" and not line.startswith(("+++ ", "--- ")):
            block.append(line)
            continue
        result += [b for b in block if b[0] == "-"] + [b for b in block if b[0] == "+"]
        block = []
        if line is not None:
            result.append(line)
    return result


def diff_lines(text: str) -> list[tuple[str, str]]:
    """(css class, line) for each line: 'add', 'del', 'hunk', 'file' or 'ctx'."""
    result = []
    for line in text.splitlines():
        if line.startswith(("--- ", "+++ ")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        result.append((kind, line))
    return result
