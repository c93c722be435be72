"""One `Run` per eval log: task identity, model identity, headline metric and per-sample values.

The headline of a benchmark (task, version, args) is the first (score, metric) of the logs'
results, in Inspect's order and skipping `stderr`, that has a numeric value in at least one of
its runs: Inspect's own headline (first scorer, first metric) whenever it has a value, and the
same choice for every model of the benchmark. Per-sample values come from that score's sample
scores (the dict key named like the score for dict-valued scores), averaged over epochs, so CIs
and significance tests are computed on what the headline summarises.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from docket.reports.logs import LoadedLogs
from inspect_ai.analysis import score_to_float

#: Sample metadata fields used for per-category breakdowns, first present wins.
CATEGORY_FIELDS = ("category", "subset", "group", "difficulty")
#: Score-dict key giving the turn at which a target first complied (None: never).
COMPLIANCE_TURN_KEY = "compliance_turn"
#: Score-dict key holding a box IoU in [0, 1].
IOU_KEY = "iou"
#: Score-dict keys `r@1`, `r@2`, ...: per-sample refusal survival (1 = not complied by turn t).
SURVIVAL_PREFIX = "r@"


@dataclass(frozen=True)
class ScoreMetric:
    """One metric of one score of a log, in the order Inspect wrote them."""

    score: str
    scorer: str
    metric: str
    value: float | None


@dataclass
class Run:
    """The numbers of one eval log that reports and gates use."""

    log: str
    task: str
    version: str
    task_args: dict[str, Any]
    model: str
    model_args: dict[str, Any]
    status: str
    created: str
    error: str | None = None
    headline_score: str | None = None
    headline_metric: str | None = None
    headline_value: float | None = None
    headline_stderr: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    samples: dict[str, float] = field(default_factory=dict)
    sample_count: int = 0
    categories: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    category_field: str | None = None
    ious: list[float] = field(default_factory=list)
    compliance_turns: list[int | None] = field(default_factory=list)
    survival: list[float] = field(default_factory=list)
    score_metrics: list[ScoreMetric] = field(default_factory=list)

    @property
    def model_label(self) -> str:
        """`provider/model` plus its model args, e.g. `docket/scripted policy=comply`."""
        args = " ".join(f"{k}={v}" for k, v in sorted(self.model_args.items()))
        return f"{self.model} {args}".strip()

    @property
    def benchmark_key(self) -> str:
        """Task name and version, e.g. `docket/smoke 1-A`."""
        return f"{self.task} {self.version}"

    @property
    def scored(self) -> bool:
        """A successful log with a numeric headline."""
        return self.status == "success" and self.headline_value is not None


def _json_dict(value: Any) -> dict[str, Any]:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return {}
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(str(value))
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _number(value: Any) -> float | None:
    if value is None or value is pd.NA:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _text(value: Any, default: str = "") -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return default
    return str(value)


def _metrics(row: pd.Series) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for column, value in row.items():
        name = str(column)
        if name.startswith("score_") and not name.startswith("score_headline_"):
            number = _number(value)
            if number is not None:
                metrics[name.removeprefix("score_")] = number
    return metrics


def _sample_value(raw: Any, key: str | None) -> Any:
    """The headline part of one sample score: the `key` entry of a dict value, else the value."""
    if isinstance(raw, str) and raw.startswith("{"):
        parsed = _json_dict(raw)
        if key is not None and key in parsed:
            return parsed[key]
        return None
    return raw


def _attach_samples(run: Run, samples: pd.DataFrame, scorer: str | None) -> None:
    if samples.empty:
        return
    run.sample_count = int(samples["id"].nunique())
    if scorer is None:
        return
    column = f"score_{scorer}"
    if column not in samples.columns:
        return
    _attach_plot_data(run, samples[column])
    frame = pd.DataFrame(
        {
            "id": samples["id"].astype(str).to_numpy(),
            "value": [_sample_value(v, run.headline_score) for v in samples[column]],
        }
    )
    frame = frame[frame["value"].notna()]
    if frame.empty:
        return
    frame = score_to_float("value")(frame)
    per_sample = frame.groupby("id", sort=True)["value"].mean()
    run.samples = {str(k): float(v) for k, v in per_sample.items()}
    for name in CATEGORY_FIELDS:
        meta = f"metadata_{name}"
        if meta in samples.columns:
            cats = pd.DataFrame(
                {"id": samples["id"].astype(str).to_numpy(), "cat": samples[meta].astype(str)}
            ).drop_duplicates("id")
            joined = cats.set_index("id").join(per_sample)
            run.categories = {
                str(cat): {"mean": _number(g["value"].mean()), "n": int(g["value"].notna().sum())}
                for cat, g in joined.groupby("cat", sort=True)
            }
            run.category_field = name
            break


def _attach_plot_data(run: Run, raw_scores: pd.Series) -> None:
    """IoUs, compliance turns and `r@t` survival from dict-valued sample scores."""
    for raw in raw_scores:
        parsed = _json_dict(raw) if isinstance(raw, str) and raw.startswith("{") else {}
        iou = _number(parsed.get(IOU_KEY))
        if iou is not None:
            run.ious.append(iou)
        if COMPLIANCE_TURN_KEY in parsed:
            turn = _number(parsed[COMPLIANCE_TURN_KEY])
            run.compliance_turns.append(None if turn is None else int(turn))
    run.survival = _survival(raw_scores)


def _survival(raw_scores: pd.Series) -> list[float]:
    """Mean of each `r@t` key over the samples that have a value: R(1), R(2), ..."""
    totals: dict[int, list[float]] = {}
    for raw in raw_scores:
        parsed = _json_dict(raw) if isinstance(raw, str) and raw.startswith("{") else {}
        for key, value in parsed.items():
            number = _number(value)
            if key.startswith(SURVIVAL_PREFIX) and number is not None:
                suffix = key.removeprefix(SURVIVAL_PREFIX)
                if suffix.isdigit():
                    totals.setdefault(int(suffix), []).append(number)
    return [sum(totals[t]) / len(totals[t]) for t in sorted(totals)]


def _score_metrics(raw: Any) -> list[ScoreMetric]:
    try:
        scores = json.loads(str(raw)) if isinstance(raw, str) else []
    except json.JSONDecodeError:
        return []
    found: list[ScoreMetric] = []
    for score in scores if isinstance(scores, list) else []:
        for metric in (score.get("metrics") or {}).values():
            found.append(
                ScoreMetric(
                    score=str(score.get("name")),
                    scorer=str(score.get("scorer")),
                    metric=str(metric.get("name")),
                    value=_number(metric.get("value")),
                )
            )
    return found


def _run(row: pd.Series) -> Run:
    task = _text(row.get("docket_registry_name")) or _text(row.get("task_name"), "?")
    return Run(
        log=_text(row.get("log")),
        task=task,
        version=_text(row.get("task_version"), "0"),
        task_args=_json_dict(row.get("docket_task_args")),
        model=_text(row.get("model"), "?"),
        model_args=_json_dict(row.get("docket_model_args")),
        status=_text(row.get("status"), "?"),
        created=_text(row.get("created")),
        error=_text(row.get("error_message")) or None,
        sample_count=int(_number(row.get("completed_samples")) or 0),
        metrics=_metrics(row),
        score_metrics=_score_metrics(row.get("docket_scores")),
    )


def choose_headline(runs: list[Run]) -> ScoreMetric | None:
    """The first non-stderr (score, metric), in log order, with a value in any of `runs`."""
    for candidate in (m for run in runs for m in run.score_metrics):
        if candidate.metric == "stderr":
            continue
        if any(
            m.value is not None
            for run in runs
            for m in run.score_metrics
            if (m.score, m.metric) == (candidate.score, candidate.metric)
        ):
            return candidate
    return None


def _apply_headline(run: Run, headline: ScoreMetric) -> None:
    by_name = {(m.score, m.metric): m.value for m in run.score_metrics}
    run.headline_score, run.headline_metric = headline.score, headline.metric
    run.headline_value = by_name.get((headline.score, headline.metric))
    run.headline_stderr = by_name.get((headline.score, "stderr"))


def build_runs(loaded: LoadedLogs) -> list[Run]:
    """One `Run` per eval row; only the newest log of identical (task, version, args, model)."""
    if loaded.evals.empty:
        return []
    rows = {_text(row.get("eval_id")): row for _, row in loaded.evals.iterrows()}
    runs = _newest_only([_run(row) for row in rows.values()])
    eval_ids = {_text(row.get("log")): eval_id for eval_id, row in rows.items()}
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.benchmark_key + json.dumps(run.task_args, sort_keys=True), []).append(
            run
        )
    for group in groups.values():
        headline = choose_headline([r for r in group if r.status == "success"])
        if headline is None:
            continue
        for run in group:
            if run.status != "success":
                continue
            _apply_headline(run, headline)
            if not loaded.samples.empty:
                mine = loaded.samples[loaded.samples["eval_id"] == eval_ids[run.log]]
                _attach_samples(run, mine, headline.scorer)
    return runs


def _newest_only(runs: list[Run]) -> list[Run]:
    newest: dict[tuple[str, str, str, str], Run] = {}
    for run in sorted(runs, key=lambda r: (r.status == "success", r.created)):
        key = (run.task, run.version, json.dumps(run.task_args, sort_keys=True), run.model_label)
        newest[key] = run
    return sorted(newest.values(), key=lambda r: (r.task, r.version, r.model_label))
