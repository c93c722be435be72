"""Read Inspect logs into pandas frames through `inspect_ai.analysis`, one file at a time.

The log directory is a local folder or an S3 store (`s3://bucket/prefix`): a store's logs are
downloaded once into a temporary folder and read there, named by their URLs
(`docket.core.logstore`). Per log the report reads its header and sample summaries, and its
samples' events only when the log carries no current health record
(`docket.reports.health.read_log_health`) or uses a decoding method (`method_counters`).

A corrupted or truncated log becomes one `LogError` naming the file; every other log is still read.
An `.eval` zip whose members would inflate past `docket.reports.logzip.MEMBER_LIMIT` is such an
error before Inspect reads it (a zip bomb). Future-dated logs and disputed eval ids are left out
with a `LogWarning` each (`docket.reports.trust`).
"""

from __future__ import annotations

import json
from collections import Counter
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
from inspect_ai.log import EvalLog, read_eval_log

from docket.core import logstore
from docket.reports.health import LogHealth, read_log_health
from docket.reports.logzip import oversized_member
from docket.reports.trust import LogWarning, screen

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
    the log's health (`docket.reports.health`)."""

    evals: pd.DataFrame
    samples: pd.DataFrame
    errors: list[LogError] = field(default_factory=list)
    files: int = 0
    counters: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Per eval id, the log's health (its record, or read from every sample's events).
    health: dict[str, LogHealth] = field(default_factory=dict)
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
    """Every `.eval` log and Inspect-named `.json` log under the local `log_dir`, sorted."""
    return [Path(p) for p in logstore.find_logs(Path(log_dir))]


def _short_error(ex: Exception) -> str:
    text = str(ex).strip().splitlines()
    detail = text[0] if text else ""
    return f"unreadable Inspect log ({type(ex).__name__}: {detail})"


def load_logs(log_dir: str | Path) -> LoadedLogs:
    """Read every log under `log_dir`; unreadable files are reported, not raised.

    Args:
        log_dir: Folder (or `s3://bucket/prefix`) searched recursively for Inspect logs.

    Returns:
        The eval and sample rows of the readable logs, the errors of the others, the number of
        log files found, the decoding-method counters and the health per eval id. Logs of a
        store are named by their URLs.
    """
    with logstore.local_logs(log_dir) as (folder, urls):
        return _load(find_log_files(folder), urls)


def _load(paths: list[Path], urls: dict[str, str]) -> LoadedLogs:
    """Read the local `paths`, each named by its URL in `urls` (itself when absent).

    Each log's header and health are read on their own (a bad file is one `LogError`), then
    the eval and sample frames of all of them in one `evals_df` / `samples_df` call each (a
    frame per file costs most of a report's time); when a batch call fails, file by file.
    """
    counters: dict[str, dict[str, Any]] = {}
    health: dict[str, LogHealth] = {}
    errors: list[LogError] = []
    headers: list[EvalLog] = []
    shown: dict[str, str] = {}
    for path in paths:
        name = urls.get(str(path), str(path))
        oversized = oversized_member(path) if path.suffix == ".eval" else None
        if oversized is not None:
            errors.append(LogError(name, f"not read: {oversized}"))
            continue
        try:
            header = read_eval_log(str(path), header_only=True)
            found = read_log_health(path, header)
        except Exception as ex:  # noqa: BLE001 - any reader failure is this file's error
            errors.append(LogError(name, _short_error(ex)))
            continue
        headers.append(header)
        health[found.eval_id] = found
        shown[header.location] = name
    evals_all, samples_all, failed = _frames(headers)
    for header, problem in failed:
        errors.append(LogError(shown[header.location], _short_error(problem)))
        health.pop(header.eval.eval_id, None)
    for location in _decoding_logs(evals_all):
        try:
            counters.update(method_counters(location))
        except Exception as ex:  # noqa: BLE001 - its counters are this file's error
            errors.append(LogError(shown.get(location, location), _short_error(ex)))
    for frame in (evals_all, samples_all):
        if "log" in frame.columns:
            frame["log"] = frame["log"].map(lambda log: shown.get(log, log))
    errors.sort(key=lambda e: e.path)
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


def _frames(
    headers: list[EvalLog],
) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[EvalLog, Exception]]]:
    """The eval rows and sample rows of `headers` (samples from the summaries on disk), and
    the logs whose rows could not be read. Logs that share an eval id, or a task id (the
    attempts of one eval-set task: a retry reuses the finished samples of the attempt before,
    uuids and all), are read one by one: a batch keeps one row per sample uuid, so it would
    give every one of them the samples of one (`docket.reports.trust` must compare them), or
    take the reused samples from the retry that counts."""
    columns = [*EvalColumns, *EXTRA_EVAL_COLUMNS]
    evals = Counter(h.eval.eval_id for h in headers)
    tasks = Counter(h.eval.task_id for h in headers)
    shared = {h.location for h in headers if evals[h.eval.eval_id] > 1 or tasks[h.eval.task_id] > 1}
    batch = [h for h in headers if h.location not in shared]
    alone = [h for h in headers if h.location in shared]
    eval_frames: list[pd.DataFrame] = []
    sample_frames: list[pd.DataFrame] = []
    failed: list[tuple[EvalLog, Exception]] = []
    if batch:
        try:
            eval_frames.append(evals_df(batch, columns=columns, quiet=True))
            sample_frames.append(samples_df(batch, quiet=True))
        except Exception:  # noqa: BLE001 - find the file that fails, read the others
            eval_frames, sample_frames, alone = [], [], headers
    for header in alone:
        try:
            evals = evals_df(header, columns=columns, quiet=True)
            samples = samples_df(header, quiet=True)
        except Exception as ex:  # noqa: BLE001 - this file's error
            failed.append((header, ex))
            continue
        eval_frames.append(evals)
        sample_frames.append(samples)
    sample_frames = [frame for frame in sample_frames if not frame.empty]
    return _by_log(eval_frames), _by_log(sample_frames), failed


def _by_log(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames as one, its rows in the order of their logs' paths (each log's kept)."""
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    if "log" in frame.columns:
        frame = frame.sort_values("log", kind="stable").reset_index(drop=True)
    return frame


def _decoding_logs(evals: pd.DataFrame) -> list[str]:
    """The logs whose model ran with `-M method=...` (only their events are read)."""
    found = []
    for log, raw in zip(evals.get("log", []), evals.get("docket_model_args", []), strict=True):
        args = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(args, dict) and args.get("method"):
            found.append(str(log))
    return found
