"""Reading a benchmark's JSONL data with one clear error line per problem."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai._util.error import PrerequisiteError


def read_jsonl(path: Path, task: str, fields: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The JSON objects of `path`, one per non-empty line; a missing file, a line that is not a
    JSON object or one without a field of `fields` is a `PrerequisiteError` naming the task,
    file, line and field."""
    if not path.is_file():
        raise PrerequisiteError(f"{task}: data file not found: {path}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise PrerequisiteError(f"{task}: {path} line {number}: not JSON") from None
        if not isinstance(row, dict):
            raise PrerequisiteError(f"{task}: {path} line {number}: not a JSON object")
        missing = [f for f in fields if f not in row]
        if missing:
            raise PrerequisiteError(f"{task}: {path} line {number}: no field {missing[0]!r}")
        rows.append(row)
    return rows
