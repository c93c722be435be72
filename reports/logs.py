"""Read Inspect logs into pandas frames through `inspect_ai.analysis`, one file at a time.

A corrupted or truncated log becomes one `LogError` naming the file; every other log is still read.
An `.eval` zip whose members would inflate past `docket.reports.logzip.MEMBER_LIMIT` is such an
error before Inspect reads it (a zip bomb). Future-dated logs and disputed eval ids are left out
with a `LogWarning` each (`docket.reports.trust`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from inspect_ai.analysis import (
    EvalColumn,
    EvalColumns,
    EventColumn,
    EventInfo,
    evals_df,
    events_df,
    samples_df,
)

from docket.reports.health import SampleHealth, read_health
from docket.reports.logzip import oversized_member
from docket.reports.trust import LogWarning, screen

#: Inspect names JSON logs `<ISO timestamp>_<task>_<id>.json`; other JSON files (eval-set.json,
#: logs.json, baselines) in a log directory are not logs.
_JSON_LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T[^_]+_.+\.json$")

#: Columns the stock `EvalColumns` lacks (its `model_args` column reads the base URL in 0.3.285).
EXTRA_EVAL_COLUMNS = [
    EvalColumn("docket_model_args", path="eval.model_args"),
    EvalColumn("docket_task_args", path="eval.task_args"),
    EvalColumn("docket_registry_name", path="eval.task_registry_name"),
    EvalColumn("docket_scores", path="results.scores"),
    # metadata and tags as edited after the eval (`EvalLog.metadata` / `.tags`)
    EvalColumn("docket_metadata", path="metadata"),
    EvalColumn("docket_tags", path="tags"),
    EvalColumn("docket_solver", path="eval.solver"),
    EvalColumn("docket_solver_args", path="eval.solver_args"),
    EvalColumn("docket_model_config", path="eval.model_generate_config"),
    EvalColumn("docket_plan_config", path="plan.config"),
    EvalColumn("docket_epochs", path="eval.config.epochs"),
    EvalColumn("docket_model_roles", path="eval.model_roles"),
    EvalColumn("docket_headline_declared", path="eval.headline_metric"),
    EvalColumn("docket_headline_resolved", path="results.headline"),
    EvalColumn("docket_usage", path="stats.model_usage"),
    EvalColumn("docket_started", path="stats.started_at"),
    EvalColumn("docket_completed", path="stats.completed_at"),
    EvalColumn("docket_commit", path="eval.revision.commit"),
    # the scorers' metric definitions: a stderr(cluster=KEY) names the samples' clusters
    EvalColumn("docket_scorers", path="eval.scorers"),
]


@dataclass(frozen=True)
class LogError:
    """A log file that could not be read, and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class LoadedLogs:
    """One row per readable eval log (`evals`), one per sample epoch (`samples`), the errors,
    and per eval id the mean decoding-method counters of its model calls (`method_counters`) and
    each sample epoch's health (`docket.reports.health`)."""

    evals: pd.DataFrame
    samples: pd.DataFrame
    errors: list[LogError] = field(default_factory=list)
    files: int = 0
    counters: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Per eval id, the health of each (sample id, epoch) read from its events.
    health: dict[str, dict[tuple[str, int], SampleHealth]] = field(default_factory=dict)
    #: Logs left out or in doubt (future-dated, a disputed eval id, the same run twice).
    warnings: list[LogWarning] = field(default_factory=list)


def method_counters(path: str | Path) -> dict[str, dict[str, Any]]:
    """Per eval id: the decoding method and the mean of each numeric counter over the model
    calls that recorded them (`ModelOutput.metadata = {"method": NAME, "choices": [...]}`, as
    `docket/local -M method=...` writes), with the number of calls."""
    events = events_df(
        str(path),
        columns=[*EventInfo, EventColumn("docket_call_metadata", path="output.metadata")],
        filter=lambda event: event.event == "model",
        quiet=True,
    )
    found: dict[str, dict[str, list[float]]] = {}
    methods: dict[str, str] = {}
    for eval_id, raw in zip(events["eval_id"], events["docket_call_metadata"], strict=True):
        metadata = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(metadata, dict) or not metadata.get("method"):
            continue
        methods[eval_id] = str(metadata["method"])
        values = found.setdefault(eval_id, {})
        for choice in (metadata.get("choices") or [])[:1]:
            for key, value in choice.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    values.setdefault(key, []).append(float(value))
    return {
        eval_id: {
            "method": methods[eval_id],
            "calls": max((len(v) for v in values.values()), default=0),
            **{key: sum(v) / len(v) for key, v in sorted(values.items())},
        }
        for eval_id, values in found.items()
    }


def find_log_files(log_dir: str | Path) -> list[Path]:
    """Every `.eval` log and Inspect-named `.json` log under `log_dir`, sorted by path."""
    root = Path(log_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: log directory not found")
    found = [p for p in root.rglob("*.eval") if p.is_file()]
    found += [p for p in root.rglob("*.json") if p.is_file() and _JSON_LOG_NAME.match(p.name)]
    return sorted(found)


def _short_error(ex: Exception) -> str:
    text = str(ex).strip().splitlines()
    detail = text[0] if text else ""
    return f"unreadable Inspect log ({type(ex).__name__}: {detail})"


def load_logs(log_dir: str | Path) -> LoadedLogs:
    """Read every log under `log_dir`; unreadable files are reported, not raised.

    Args:
        log_dir: Folder searched recursively for Inspect logs.

    Returns:
        The eval and sample rows of the readable logs, the errors of the others, the number of
        log files found, the decoding-method counters and the sample health per eval id.
    """
    eval_frames: list[pd.DataFrame] = []
    sample_frames: list[pd.DataFrame] = []
    counters: dict[str, dict[str, Any]] = {}
    health: dict[str, dict[tuple[str, int], SampleHealth]] = {}
    errors: list[LogError] = []
    paths = find_log_files(log_dir)
    for path in paths:
        oversized = oversized_member(path) if path.suffix == ".eval" else None
        if oversized is not None:
            errors.append(LogError(str(path), f"not read: {oversized}"))
            continue
        try:
            evals = evals_df(str(path), columns=[*EvalColumns, *EXTRA_EVAL_COLUMNS], quiet=True)
            samples = samples_df(str(path), quiet=True)
            if _uses_a_decoding_method(evals):
                counters.update(method_counters(path))
            eval_id, found = read_health(path)
        except Exception as ex:  # noqa: BLE001 - any reader failure is this file's error
            errors.append(LogError(str(path), _short_error(ex)))
            continue
        eval_frames.append(evals)
        health[eval_id] = found
        if not samples.empty:
            sample_frames.append(samples)
    evals_all = pd.concat(eval_frames, ignore_index=True) if eval_frames else pd.DataFrame()
    samples_all = pd.concat(sample_frames, ignore_index=True) if sample_frames else pd.DataFrame()
    evals_all, samples_all, warnings = screen(evals_all, samples_all)
    return LoadedLogs(
        evals=evals_all,
        samples=samples_all,
        warnings=warnings,
        errors=errors,
        files=len(paths),
        counters=counters,
        health=health,
    )


def _uses_a_decoding_method(evals: pd.DataFrame) -> bool:
    """Whether a log's model ran with `-M method=...` (only then are its events read)."""
    for raw in evals.get("docket_model_args", []):
        args = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(args, dict) and args.get("method"):
            return True
    return False
