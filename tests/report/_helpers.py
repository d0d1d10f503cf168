"""Checks the report tests share."""

from __future__ import annotations

from pathlib import Path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    """``path`` is a PNG file with real content (a plot, not an empty canvas stub)."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    assert len(data) > 2000, f"{path} is suspiciously small ({len(data)} bytes)"
