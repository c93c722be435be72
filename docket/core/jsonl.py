"""JSON Lines: one reader and one writer, a bad line named by its number.

`parse_lines` is the reader every docket module uses: it yields `(number, value)` for each
non-empty line and turns a line that is not JSON (a syntax error, an over-long integer, nesting
too deep) into one error naming the line, built by the caller so that each keeps its own words
(`JsonlLineError` by default). `read_jsonl` reads a benchmark's data file on top of it, and
`write_jsonl` writes rows back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from docket.core.inspect_private import PrerequisiteError

#: Builds the caller's error for line `number` from what `json.loads` raised.
LineError = Callable[[int, "JsonlLineError"], Exception]


class JsonlLineError(ValueError):
    """A JSONL line that is not JSON."""

    def __init__(self, number: int, cause: ValueError | RecursionError) -> None:
        """The error of line `number`.

        Args:
            number: The line's number.
            cause: What `json.loads` raised.
        """
        self.number = number
        self.cause = cause
        super().__init__(f"line {number}: not JSON ({self.reason})")

    @property
    def syntax(self) -> bool:
        """True for a JSON syntax error (a `json.JSONDecodeError`)."""
        return isinstance(self.cause, json.JSONDecodeError)

    @property
    def reason(self) -> str:
        """The decoder's message for a syntax error, else the exception's type name."""
        if isinstance(self.cause, json.JSONDecodeError):
            return self.cause.msg
        return type(self.cause).__name__


def parse_lines(
    lines: Iterable[str],
    error: LineError | None = None,
    *,
    start: int = 1,
    count_blank: bool = True,
    skip_invalid: bool = False,
) -> Iterator[tuple[int, Any]]:
    """The JSON value of each non-empty line with its number.

    Args:
        lines: The lines (a file handle, `text.splitlines()`, ...).
        error: Builds the exception raised for a line that is not JSON; None raises the
            `JsonlLineError` itself.
        start: The number of the first line.
        count_blank: Whether blank lines count in the numbering (False: rows count from `start`).
        skip_invalid: Skip a line that is not JSON instead of raising.

    Returns:
        An iterator of `(number, value)` pairs.

    Raises:
        JsonlLineError: A line is not JSON (or what `error` builds from it).
    """
    number = start - 1
    for line in lines:
        if not line.strip():
            number += count_blank
            continue
        number += 1
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as ex:  # JSONDecodeError, huge ints, deep nesting
            if skip_invalid:
                continue
            problem = JsonlLineError(number, ex)
            raise (problem if error is None else error(number, problem)) from None
        yield number, value


def jsonl_text(
    rows: Iterable[Any], *, sort_keys: bool = False, compact: bool = False, ascii_only: bool = True
) -> str:
    """`rows` as JSON lines, each ending with a newline.

    Args:
        rows: JSON-ready values, one per line.
        sort_keys: Sort the keys of every object.
        compact: No spaces after `,` and `:`.
        ascii_only: Escape non-ASCII characters (`json.dumps`' `ensure_ascii`).

    Returns:
        The text.
    """
    separators = (",", ":") if compact else None
    return "".join(
        json.dumps(row, sort_keys=sort_keys, separators=separators, ensure_ascii=ascii_only) + "\n"
        for row in rows
    )


def write_jsonl(
    path: str | Path,
    rows: Iterable[Any],
    *,
    sort_keys: bool = False,
    compact: bool = False,
    ascii_only: bool = True,
) -> Path:
    """Write `rows` as JSON lines (UTF-8), creating the parent folder.

    Args:
        path: The file to write.
        rows: JSON-ready values, one per line.
        sort_keys: Sort the keys of every object.
        compact: No spaces after `,` and `:`.
        ascii_only: Escape non-ASCII characters (`json.dumps`' `ensure_ascii`).

    Returns:
        The path written.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = jsonl_text(rows, sort_keys=sort_keys, compact=compact, ascii_only=ascii_only)
    out.write_text(text, encoding="utf-8")
    return out


def read_jsonl(path: Path, task: str, fields: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The JSON objects of a benchmark's data file, one per non-empty line.

    Args:
        path: The JSONL file.
        task: The task's name, which starts every error line.
        fields: Fields every row must have.

    Returns:
        The rows.

    Raises:
        PrerequisiteError: The file is missing, or a line is not a JSON object or lacks a field
            of `fields` (the line names the task, file, line and field).
    """
    if not path.is_file():
        raise PrerequisiteError(f"{task}: data file not found: {path}")

    def not_json(number: int, _: JsonlLineError) -> Exception:
        return PrerequisiteError(f"{task}: {path} line {number}: not JSON")

    rows = []
    for number, row in parse_lines(path.read_text(encoding="utf-8").splitlines(), not_json):
        if not isinstance(row, dict):
            raise PrerequisiteError(f"{task}: {path} line {number}: not a JSON object")
        missing = [f for f in fields if f not in row]
        if missing:
            raise PrerequisiteError(f"{task}: {path} line {number}: no field {missing[0]!r}")
        rows.append(row)
    return rows
