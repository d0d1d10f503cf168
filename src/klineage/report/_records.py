"""Reading the records a report shows (``optimize.json``, ``bench.json``): their models belong
to their producers (``optimize.records``, ``bench.records``); a malformed file is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from klineage.errors import ConfigError

__all__ = ["read_record"]

_M = TypeVar("_M", bound=BaseModel)


def read_record(path: Path, model: type[_M]) -> _M:
    """``path`` parsed as ``model``; a missing or malformed file is one ConfigError line."""
    if not path.is_file():
        raise ConfigError(f"{path.parent}: the run has no {path.name}")
    try:
        return model.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from exc
