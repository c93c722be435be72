"""Run records: a metrics JSONL (one object per update) and a rich progress bar."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from docket.core.jsonl import parse_lines


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsLog:
    """Appends one JSON object per line to `path` (flushed each time, so a stopped run keeps
    every finished update)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("a")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps({k: _plain(v) for k, v in record.items()}) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics JSONL (a truncated last line is skipped)."""
    lines = Path(path).read_text().splitlines()
    return [row for _, row in parse_lines(lines, skip_invalid=True)]


class RunProgress:
    """A rich progress bar over the updates with the latest reward; silent when disabled."""

    def __init__(self, total: int, label: str, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            disable=not enabled,
        )
        self.task = self.progress.add_task(label, total=total, status="")

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def advance(self, status: str) -> None:
        self.progress.update(self.task, advance=1, status=status)
