"""Trajectory records in the Who&When / CORRECT-Error JSON shape: parse, validate, read, write.

One record: `question`, `ground_truth` (or CORRECT's `groundtruth`), `history` (a list of
`{name, role, content}`; the step's agent is `name`, else `role`), `mistake_agent`,
`mistake_step` (0-based, int or digit string), `mistake_reason`. Every other field is kept as
metadata. Bad records raise `TrajectoryError` naming the file, the index and the field.

Sources: a Who&When folder (`Hand-Crafted/` or `Algorithm-Generated/`, one JSON file per
failure, read in numeric order; records without a `dataset` field get the folder's name), a
CORRECT-Error file (`.jsonl` rows or the Hugging Face `.parquet` file), or any JSON / JSONL file,
optionally gzip-compressed.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docket.core.jsonl import JsonlLineError, jsonl_text, parse_lines

REQUIRED = ("question", "history", "mistake_agent", "mistake_step")
_ID_KEYS = ("trajectory_id", "question_ID", "question_id", "id")


class TrajectoryError(ValueError):
    """A trajectory record that cannot be used, with the file and index it came from."""


@dataclass(frozen=True)
class Step:
    """One history entry."""

    name: str
    role: str
    content: str


@dataclass(frozen=True)
class Trajectory:
    """A failed multi-agent trajectory with its decisive-error label."""

    id: str
    question: str
    ground_truth: str
    history: tuple[Step, ...]
    mistake_agent: str
    mistake_step: int
    mistake_reason: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def agents(self) -> list[str]:
        """Distinct agent names in order of first appearance."""
        return list(dict.fromkeys(step.name for step in self.history))


def parse_record(raw: object, source: str, index: int) -> Trajectory:
    """Validate one raw record; `source` and `index` locate it in errors."""
    where = f"{source}[{index}]"
    if not isinstance(raw, dict):
        raise TrajectoryError(f"{where}: a trajectory must be a JSON object")
    missing = [key for key in REQUIRED if key not in raw]
    if missing:
        raise TrajectoryError(f"{where}: missing field(s) {', '.join(missing)}")
    history = raw["history"]
    if not isinstance(history, list) or not history:
        raise TrajectoryError(f"{where}: field 'history' must be a non-empty list")
    steps = [_parse_step(entry, f"{where}.history[{i}]") for i, entry in enumerate(history)]
    step = raw["mistake_step"]
    if isinstance(step, str) and step.strip().isascii() and step.strip().isdigit():
        digits = step.strip().lstrip("0") or "0"
        step = int(digits) if len(digits) < 10 else -1  # out of range, reported below
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < len(steps):
        raise TrajectoryError(
            f"{where}: field 'mistake_step'={raw['mistake_step']!r} is out of range "
            f"(0..{len(steps) - 1})"
        )
    agent = raw["mistake_agent"]
    if not isinstance(agent, str) or not agent.strip():
        raise TrajectoryError(f"{where}: field 'mistake_agent' must be a non-empty string")
    ident = next((str(raw[k]) for k in _ID_KEYS if raw.get(k) not in (None, "")), "")
    truth = raw.get("ground_truth", raw.get("groundtruth", ""))
    known = {*REQUIRED, "trajectory_id", "ground_truth", "groundtruth", "mistake_reason"}
    return Trajectory(
        id=ident or f"{Path(source).name}-{index}",
        question=str(raw["question"]),
        ground_truth="" if truth is None else str(truth),
        history=tuple(steps),
        mistake_agent=agent.strip(),
        mistake_step=step,
        mistake_reason=str(raw.get("mistake_reason") or ""),
        metadata={k: v for k, v in raw.items() if k not in known},
    )


def _parse_step(entry: object, where: str) -> Step:
    if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
        raise TrajectoryError(f"{where}: a history entry needs a string 'content'")
    name = entry.get("name") or entry.get("role")
    if not isinstance(name, str) or not name.strip():
        raise TrajectoryError(f"{where}: a history entry needs 'name' or 'role'")
    return Step(name.strip(), str(entry.get("role") or name), entry["content"])


def to_json(trajectory: Trajectory) -> dict[str, Any]:
    """The record as written (Who&When keys plus CORRECT-Error's)."""
    return {
        "trajectory_id": trajectory.id,
        "question": trajectory.question,
        "ground_truth": trajectory.ground_truth,
        "history": [
            {"name": s.name, "role": s.role, "content": s.content} for s in trajectory.history
        ],
        "mistake_agent": trajectory.mistake_agent,
        "mistake_step": trajectory.mistake_step,
        "mistake_reason": trajectory.mistake_reason,
        **trajectory.metadata,
    }


def _open_text(path: Path) -> str:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return handle.read()
    return path.read_text(encoding="utf-8")


def _raw_records(path: Path) -> Iterable[tuple[str, int, object]]:
    """(source, index, raw) for a file (.json list/object, .jsonl, optionally .gz) or a folder."""
    if path.is_dir():
        files = sorted(path.rglob("*.json"), key=_numeric_order)
        if not files:
            raise TrajectoryError(f"{path}: no .json trajectory files in this folder")
        for file in files:
            for source, index, raw in _raw_records(file):
                if isinstance(raw, dict) and "dataset" not in raw:
                    raw = {**raw, "dataset": file.parent.name}
                yield source, index, raw
        return
    if path.suffix == ".parquet":
        yield from _parquet_records(path)
        return
    if not path.exists():
        raise TrajectoryError(f"{path}: no such trajectory file or folder")
    try:
        text = _open_text(path)
    except (UnicodeDecodeError, OSError, EOFError) as ex:  # not UTF-8, bad gzip, unreadable
        raise TrajectoryError(f"{path}: cannot read ({type(ex).__name__})") from None
    stem = path.name.removesuffix(".gz")
    if stem.endswith(".jsonl"):

        def bad(number: int, ex: JsonlLineError) -> TrajectoryError:
            return TrajectoryError(f"{path}[{number}]: invalid JSON ({ex.reason})")

        for number, row in parse_lines(text.splitlines(), bad, start=0):
            yield str(path), number, row
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as ex:
        raise TrajectoryError(f"{path}: invalid JSON ({ex.msg} at line {ex.lineno})") from None
    except (ValueError, RecursionError) as ex:  # over-long integers, deep nesting
        raise TrajectoryError(f"{path}: invalid JSON ({type(ex).__name__})") from None
    for index, raw in enumerate(data if isinstance(data, list) else [data]):
        yield str(path), index, raw


def _numeric_order(path: Path) -> tuple[str, int, str]:
    """Folder, then the number in the file name (Who&When's 1.json, 2.json, ..., 10.json)."""
    digits = "".join(c for c in path.stem if c.isdigit())
    return str(path.parent), int(digits) if digits and len(digits) < 12 else -1, path.name


def _parquet_records(path: Path) -> Iterable[tuple[str, int, object]]:
    """Rows of a parquet file (CORRECT-Error as published on Hugging Face), as plain JSON."""
    try:
        import pandas as pd

        frame = pd.read_parquet(path)
        rows = json.loads(frame.to_json(orient="records"))
    except (OSError, ValueError, ImportError) as ex:
        raise TrajectoryError(f"{path}: cannot read parquet ({type(ex).__name__})") from None
    for index, raw in enumerate(rows):
        yield str(path), index, raw


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """Read and validate every trajectory of a file or folder."""
    return [parse_record(raw, src, i) for src, i, raw in _raw_records(Path(path))]


def write_trajectories(trajectories: Iterable[Trajectory], path: str | Path) -> None:
    """Write JSON lines (gzip-compressed when `path` ends with .gz, reproducibly)."""
    lines = jsonl_text(to_json(t) for t in trajectories)
    target = Path(path)
    if target.suffix == ".gz":
        with (
            open(target, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as handle,
        ):
            handle.write(lines.encode("utf-8"))
    else:
        target.write_text(lines, encoding="utf-8")
