"""Reading an LLM's answer: header lines, exactly one fenced block, whole file or strict diff.

Every way an answer can be unusable (no block, two blocks, a block cut off, prose only, a diff
that does not apply, no change) yields a reason string, never an exception: the caller records
it as a failed proposal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Extracted", "apply_unified_diff", "extract_answer", "extract_json"]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+.-]*)[^\n`]*$")
_HEADER = re.compile(r"^[\s*_>#-]*(FEATURE|FLAGS|TUNABLES)[\s*_]*:[\s*_]*(.*?)\s*$", re.IGNORECASE)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Extracted:
    source: str
    feature: str | None
    """As the answer named it (None: no FEATURE line; 'none' is kept as given)."""
    flags: tuple[str, ...] | None = None
    """None: keep the kernel's flags."""
    tunables: dict[str, Any] = field(default_factory=dict)
    rationale: str = ""


@dataclass(frozen=True)
class _Block:
    lang: str
    body: str
    start: int


def _blocks(lines: list[str]) -> tuple[list[_Block], str | None]:
    blocks, i = [], 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match.group(1), match.group(2).lower()
        end = next((j for j in range(i + 1, len(lines))
                    if lines[j].strip().startswith(fence[0] * len(fence))
                    and not lines[j].strip().strip(fence[0])), None)
        if end is None:
            return blocks, (f"the code block opened on line {i + 1} is never closed "
                            "(the answer looks cut off)")
        blocks.append(_Block(lang, "\n".join(lines[i + 1:end]), i))
        i = end + 1
    return blocks, None


def extract_answer(text: str, old_source: str, truncated: bool = False) -> Extracted | str:
    """The new kernel an answer proposes, or why the answer is unusable."""
    lines = text.splitlines()
    blocks, problem = _blocks(lines)
    if problem:
        return problem + (" (the reply hit the max_tokens limit)" if truncated else "")
    if not blocks:
        return ("no code block in the answer" if text.strip() else "the answer is empty") + (
            " (the reply hit the max_tokens limit)" if truncated else "")
    if len(blocks) > 1:
        return f"{len(blocks)} code blocks in the answer; exactly one was asked for"
    block = blocks[0]
    headers = _headers(lines[: block.start])
    if isinstance(headers, str):
        return headers
    if block.lang in {"diff", "patch", "udiff"} or block.body.lstrip().startswith(("--- ", "@@ ")):
        try:
            source = apply_unified_diff(old_source, block.body)
        except ValueError as exc:
            return str(exc)
    else:
        source = block.body.rstrip("\n") + "\n"
    if not source.strip():
        return "the code block is empty"
    if source.strip() == old_source.strip():
        return "the answer does not change the kernel"
    prose = " ".join(ln.strip() for ln in lines[: block.start] if not _HEADER.match(ln)).strip()
    feature, flags, tunables = headers
    return Extracted(source=source, feature=feature, flags=flags, tunables=tunables,
                     rationale=prose[:300])


def _headers(lines: list[str]) -> tuple[str | None, tuple[str, ...] | None, dict[str, Any]] | str:
    feature, flags, tunables = None, None, {}
    for line in lines:
        match = _HEADER.match(line)
        if not match:
            continue
        key, value = match.group(1).upper(), match.group(2).strip().strip("`'\"")
        if key == "FEATURE":
            feature = value.split()[0].strip("`'\".,").lower() if value else None
        elif key == "FLAGS":
            flags = () if value.lower() in {"", "(none)", "none", "(nothing)"} else tuple(value.split())
        else:
            try:
                parsed = json.loads(value) if value else {}
            except json.JSONDecodeError:
                return f"the TUNABLES line is not a JSON object: {value[:80]!r}"
            if not isinstance(parsed, dict):
                return f"the TUNABLES line is not a JSON object: {value[:80]!r}"
            tunables = parsed
    return feature, flags, tunables


def apply_unified_diff(old: str, diff: str) -> str:
    """Apply a unified diff strictly: every context and removed line must match exactly.

    A hunk is placed at its stated line if it matches there, else at the one place after the
    previous hunk where its old side matches exactly (LLMs miscount line numbers); two or more
    such places, or none, raises ValueError saying which hunk failed and why."""
    source = old.splitlines()
    out: list[str] = []
    cursor = 0
    hunks = _hunks(diff.splitlines())
    if isinstance(hunks, str):
        raise ValueError(hunks)
    for number, (start, before, after) in enumerate(hunks, 1):
        at = _place(source, before, start - 1, cursor)
        if isinstance(at, str):
            raise ValueError(f"the diff's hunk {number} {at}")
        out.extend(source[cursor:at])
        out.extend(after)
        cursor = at + len(before)
    out.extend(source[cursor:])
    return "\n".join(out) + "\n"


def _hunks(lines: list[str]) -> list[tuple[int, list[str], list[str]]] | str:
    hunks: list[tuple[int, list[str], list[str]]] = []
    for line in lines:
        match = _HUNK.match(line)
        if match:
            hunks.append((int(match.group(1)), [], []))
        elif line.startswith("\\ ") or (not hunks and line.startswith(("--- ", "+++ ", "diff "))):
            continue
        elif hunks:
            kind, body = (line[:1], line[1:]) if line else (" ", "")
            if kind not in " +-":
                return f"the diff has a line that is not context, + or -: {line[:60]!r}"
            if kind in " -":
                hunks[-1][1].append(body)
            if kind in " +":
                hunks[-1][2].append(body)
    return hunks or "the diff has no @@ hunk"


def _place(source: list[str], before: list[str], stated: int, cursor: int) -> int | str:
    def fits(at: int) -> bool:
        return at >= cursor and source[at:at + len(before)] == before

    if stated >= cursor and fits(max(stated, 0)):
        return max(stated, 0)
    spots = [at for at in range(cursor, len(source) - len(before) + 1) if fits(at)]
    if len(spots) == 1:
        return spots[0]
    return "does not match the kernel" if not spots else f"matches {len(spots)} places"


def extract_json(text: str) -> dict[str, Any] | str:
    """The one JSON object of an answer (in a ```json block or bare), or why there is none."""
    lines = text.splitlines()
    blocks, problem = _blocks(lines)
    if problem:
        return problem
    candidates = [b.body for b in blocks] or [text[text.find("{"): text.rfind("}") + 1]]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return "no JSON object in the answer"
