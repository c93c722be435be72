"""One `Run` per eval log: its identity, its declared headline and the per-sample values behind it.

Identity (a leaderboard row): task, version, task args, model + model args, solver + solver args,
the non-default generation config (eval-time and model-level, operational keys such as retries
and timeouts left out), epochs and model roles. Of several logs with the same identity the newest
successful one counts; the others are kept as `superseded` so the report lists them. Logs are
screened first (`docket.reports.trust`): a future-dated log or a disputed eval id never becomes
the newest run, and two logs of one row created in the same second are named.

The headline is resolved per run (`docket.reports.headline`). Per-sample values come from the
headline scorer's sample scores (the `sample_key` entry of dict values), averaged over epochs;
survival headlines keep every sample's (time, event) pairs instead.

Each run also carries the hash of the data split it ran on (`docket.core.splits.split_of` of the
eval metadata; None for tasks that record none) and, when the headline's scorer declares
clustered standard errors (`stderr(cluster=KEY)`, e.g. DocVAL's `doc_id`), each sample's cluster.

Errored samples (`docket.reports.health`: an error, or no answer of the model under test before
an error or a limit) are left out of every value; a model-free run (declared
`metadata["model_free"]`, or no model call in any sample) is attributed to `MODEL_FREE`, and its
identity ignores the model, model args, generation config and roles.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import pandas as pd
from inspect_ai.scorer import value_to_float

from docket.core.headline import HeadlineError, HeadlineSpec, from_metadata
from docket.core.splits import split_of
from docket.reports import survival
from docket.reports.headline import MEAN_METRICS, flag_for, from_inspect, with_kind
from docket.reports.health import (
    LogHealth,
    RunHealth,
    errored_text,
    failure_parts,
)
from docket.reports.logs import LoadedLogs
from docket.reports.trust import LogWarning, created_at

#: Sample metadata fields used for per-category breakdowns, first present wins.
CATEGORY_FIELDS = ("category", "subset", "group", "difficulty")
#: Score-dict key holding a box IoU in [0, 1] (DocVAL): drawn as a histogram.
IOU_KEY = "iou"
#: Generation-config keys that change how a run is executed, not what it measures.
OPERATIONAL_CONFIG = frozenset(
    {
        "max_retries",
        "timeout",
        "attempt_timeout",
        "stream_idle_timeout",
        "max_connections",
        "adaptive_connections",
        "cache",
        "batch",
        "extra_headers",
    }
)

#: What a model-free run (a task whose score does not depend on the model under test) shows and
#: stores in place of the model: its rows are methods, never attributed to a model.
MODEL_FREE = "(model-free)"
#: Task metadata keys a benchmark may declare (read here, written by the tasks).
MODEL_FREE_KEY = "model_free"
#: Set by `docket suite` when calls carried a budget other than the run's:
#: `{"run": 256, "calls": {"model": [512]}}`.
FORCED_MAX_TOKENS_KEY = "docket_max_tokens"
METHOD_KEY = "method"
#: The task's chance row on its headline: `{"value": ..., "attacker": ..., "source": ...}`.
CHANCE_KEY = "chance"

to_float = value_to_float()


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
    solver: str | None = None
    solver_args: dict[str, Any] = field(default_factory=dict)
    generate: dict[str, Any] = field(default_factory=dict)
    epochs: int = 1
    roles: dict[str, str] = field(default_factory=dict)
    benchmark: str = ""
    tags: list[str] = field(default_factory=list)
    headline: HeadlineSpec | None = None
    headline_value: float | None = None
    headline_stderr: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    score_metrics: list[ScoreMetric] = field(default_factory=list)
    #: (sample id, epoch, parsed score value) of the headline scorer, errored samples left out
    raw_scores: list[tuple[str, int, Any]] = field(default_factory=list)
    samples: dict[str, float] = field(default_factory=dict)
    observations: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    sample_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    sample_count: int = 0
    errored_samples: int = 0
    categories: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    category_field: str | None = None
    ious: list[float] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    wall_seconds: float | None = None
    commit: str | None = None
    unscored_reason: str | None = None
    superseded: list[Run] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overrides: list[dict[str, Any]] = field(default_factory=list)
    #: Mean per-call counters of a decoding method (`docket/local -M method=...`): NFE,
    #: acceptance rate, tokens per forward, latency, ...
    method_counters: dict[str, Any] = field(default_factory=dict)
    #: SHA-256 of the data split the task ran on (None: the task records none).
    split: str | None = None
    #: Sample metadata key of the headline's clusters (`stderr(cluster=KEY)`), and each
    #: sample's cluster id.
    cluster_field: str | None = None
    clusters: dict[str, str] = field(default_factory=dict)
    #: What the samples did (model calls, failures, limits, parse results), from their events.
    health: RunHealth = field(default_factory=RunHealth)
    #: The score does not depend on the model under test (declared by the task as
    #: `metadata["model_free"]`, or no sample made a model call): a method row, not a model's.
    model_free: bool = False
    #: Scored samples (not errored) without a headline value (NaN, or the key missing).
    valueless: int = 0
    #: The task's own method name (`metadata["method"]`), shown for model-free rows.
    method: str | None = None
    #: Token budgets the calls carried where the task forced its own (`docket_max_tokens`).
    forced_max_tokens: Any = None
    #: The task's chance row on its headline (`metadata["chance"]`: value, attacker, source),
    #: the strongest blind attacker's score, drawn as a line beside the rows.
    chance: dict[str, Any] | None = None

    @property
    def model_label(self) -> str:
        """`provider/model` plus its model args, e.g. `docket/scripted policy=comply`."""
        return label(self.model, self.model_args)

    @property
    def row_model(self) -> str:
        """The model a row and a baseline entry are attributed to: `MODEL_FREE` for model-free
        runs (every model gets the same score), else `model_label`."""
        return MODEL_FREE if self.model_free else self.model_label

    @property
    def method_label(self) -> str:
        """A model-free row's name: the task's method (or the task), its args and solver."""
        args = label(self.method or self.task.rsplit("/", 1)[-1], self.task_args)
        return f"{args} solver={self.solver}" if self.solver else args

    @property
    def setup(self) -> dict[str, str]:
        """The non-model parts of the row identity that are set: solver, config, epochs, roles
        (a model-free run keeps only the solver and epochs: no model call reads the others)."""
        parts: dict[str, str] = {}
        if self.solver:
            parts["solver"] = label(self.solver, self.solver_args)
        if not self.model_free:
            for key, value in sorted(self.generate.items()):
                parts[key] = json.dumps(value) if not isinstance(value, str) else value
        if self.epochs != 1:
            parts["epochs"] = str(self.epochs)
        if not self.model_free:
            for role, model in sorted(self.roles.items()):
                parts[f"role {role}"] = model
        return parts

    @property
    def identity(self) -> str:
        """Everything that makes two logs the same leaderboard row (the split included)."""
        return json.dumps(
            [self.task, self.version, self.task_args, self.row_model, self.setup, self.split],
            sort_keys=True,
            default=str,
        )

    @property
    def table_key(self) -> str:
        """Task, version, task args and split: the runs of one leaderboard table (rows of
        different splits are never ranked against each other)."""
        return json.dumps(
            [self.task, self.version, self.task_args, self.split], sort_keys=True, default=str
        )

    @property
    def split_short(self) -> str:
        """The split hash's first 12 characters (as `docket generate` prints it), or "–"."""
        return self.split[:12] if self.split else "–"

    @property
    def value_kind(self) -> str | None:
        """binary | continuous | survival (None before the headline is resolved)."""
        return None if self.headline is None else self.headline.value

    @property
    def n(self) -> int:
        """Samples with a headline value."""
        return len(self.observations) if self.value_kind == "survival" else len(self.samples)

    @property
    def scored(self) -> bool:
        """A successful log with a numeric headline."""
        return self.unscored_reason is None and self.headline_value is not None

    @property
    def tokens(self) -> dict[str, int]:
        """Input, output and total tokens over every model the run called (roles included)."""
        totals = {"input": 0, "output": 0, "total": 0}
        for usage in self.usage.values():
            totals["input"] += int(usage.get("input_tokens") or 0)
            totals["output"] += int(usage.get("output_tokens") or 0)
            totals["total"] += int(usage.get("total_tokens") or 0)
        return totals


def label(name: str, args: dict[str, Any]) -> str:
    """`name k=v ...` with the args sorted."""
    rendered = " ".join(f"{k}={v}" for k, v in sorted(args.items()))
    return f"{name} {rendered}".strip()


def _json(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (dict, list)):
        return value
    try:
        return json.loads(str(value))
    except json.JSONDecodeError:
        return None


def _json_dict(value: Any) -> dict[str, Any]:
    parsed = _json(value)
    return parsed if isinstance(parsed, dict) else {}


def number(value: Any) -> float | None:
    """A finite float, or None (NaN, missing, not a number)."""
    if value is None or value is pd.NA or isinstance(value, bool):
        return None if not isinstance(value, bool) else float(value)
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def _text(value: Any, default: str = "") -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return default
    return str(value)


def _score_metrics(raw: Any) -> list[ScoreMetric]:
    scores = _json(raw)
    found: list[ScoreMetric] = []
    for score in scores if isinstance(scores, list) else []:
        for key, metric in (score.get("metrics") or {}).items():
            found.append(
                ScoreMetric(
                    score=str(score.get("name")),
                    scorer=str(score.get("scorer")),
                    # Inspect's key (its headline resolves by it), not the registry name
                    # ("docket/accuracy_drop") stored in the metric
                    metric=str(key),
                    value=number(metric.get("value")),
                )
            )
    return found


def _generate(row: pd.Series) -> dict[str, Any]:
    merged = {
        **_json_dict(row.get("docket_model_config")),
        **_json_dict(row.get("docket_plan_config")),
    }
    return {k: v for k, v in merged.items() if v is not None and k not in OPERATIONAL_CONFIG}


def _roles(raw: Any) -> dict[str, str]:
    roles: dict[str, str] = {}
    for role, config in _json_dict(raw).items():
        configs = config if isinstance(config, list) else [config]
        labels = []
        for one in configs:
            if not isinstance(one, dict):
                continue
            extra = {k: v for k, v in (one.get("config") or {}).items() if v is not None}
            labels.append(label(str(one.get("model")), {**(one.get("args") or {}), **extra}))
        roles[str(role)] = " | ".join(labels)
    return roles


def _seconds(start: Any, end: Any) -> float | None:
    try:
        begun = datetime.fromisoformat(_text(start))
        ended = datetime.fromisoformat(_text(end))
    except ValueError:
        return None
    return max(0.0, (ended - begun).total_seconds())


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def run_from_row(row: pd.Series) -> Run:
    """A `Run` with identity and log-level numbers (no headline yet)."""
    task = _text(row.get("docket_registry_name")) or _text(row.get("task_name"), "?")
    metadata = _json_dict(row.get("docket_metadata"))
    tags = _json(row.get("docket_tags"))
    usage = {
        str(model): {k: int(v) for k, v in values.items() if isinstance(v, (int, float))}
        for model, values in _json_dict(row.get("docket_usage")).items()
        if isinstance(values, dict)
    }
    return Run(
        log=_text(row.get("log")),
        task=task,
        version=_text(row.get("task_version"), "0"),
        task_args=_json_dict(row.get("docket_task_args")),
        model=_text(row.get("model"), "?"),
        model_args=_json_dict(row.get("docket_model_args")),
        status=_text(row.get("status"), "?"),
        created=_text(row.get("created")),
        error=_text(row.get("error_message")).strip().splitlines()[0]
        if _text(row.get("error_message")).strip()
        else None,
        solver=_text(row.get("docket_solver")) or None,
        solver_args=_json_dict(row.get("docket_solver_args")),
        generate=_generate(row),
        epochs=int(number(row.get("docket_epochs")) or 1),
        roles=_roles(row.get("docket_model_roles")),
        benchmark=str(metadata.get("benchmark") or task),
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],
        metrics={
            f"{m.score}/{m.metric}": m.value
            for m in _score_metrics(row.get("docket_scores"))
            if m.value is not None
        },
        score_metrics=_score_metrics(row.get("docket_scores")),
        usage=usage,
        wall_seconds=_seconds(row.get("docket_started"), row.get("docket_completed")),
        commit=_text(row.get("docket_commit")) or None,
        split=split_of(metadata),
        # a task's own limits (task metadata `notes`), printed beside its numbers
        notes=[n for n in _list(metadata.get("notes")) if isinstance(n, str)],
        method=str(metadata[METHOD_KEY]) if metadata.get(METHOD_KEY) else None,
        forced_max_tokens=metadata.get(FORCED_MAX_TOKENS_KEY),
        chance=chance_of(metadata),
    )


def chance_of(metadata: dict[str, Any]) -> dict[str, Any] | None:
    """The task metadata's `chance` (a dict with a finite number `value`), else None."""
    chance = metadata.get(CHANCE_KEY)
    if not isinstance(chance, dict):
        return None
    value = number(chance.get("value"))
    if value is None or not math.isfinite(value):
        return None
    return {"value": value, "attacker": str(chance.get("attacker", "")), **_source(chance)}


def _source(chance: dict[str, Any]) -> dict[str, str]:
    return {"source": str(chance["source"])} if chance.get("source") else {}


def resolve_headline(
    run: Run, row: pd.Series, flags: dict[str, HeadlineSpec]
) -> HeadlineSpec | None:
    """The run's headline: task metadata, else a `--headline` flag, else Inspect's own."""
    flag = flag_for(run.task, flags)
    try:
        declared = from_metadata(_json_dict(row.get("docket_metadata")))
    except HeadlineError as ex:
        run.notes.append(f"task headline declaration ignored: {ex}")
        declared = None
    if declared is not None:
        if flag is not None and flag.comparable_key()[:2] != declared.comparable_key()[:2]:
            run.notes.append(
                f"--headline for {run.task} ignored: the task declares {declared.name} "
                f"({declared.direction} is better)"
            )
        return declared
    if flag is not None:
        return flag
    inspect_spec = from_inspect(
        _json_dict(row.get("docket_headline_declared")),
        _json_dict(row.get("docket_headline_resolved")),
    )
    if inspect_spec is not None:
        return inspect_spec
    first = next((m for m in run.score_metrics if m.metric != "stderr"), None)
    if first is None:
        return None
    return HeadlineSpec(metric=first.metric, scorer=first.scorer, score=first.score)


def _find_metric(run: Run, spec: HeadlineSpec) -> ScoreMetric | None:
    for m in run.score_metrics:
        if spec.scorer is not None and m.scorer != spec.scorer:
            continue
        if spec.score is not None and m.score != spec.score:
            continue
        if m.metric == spec.metric:
            return m
    return None


def _complete(spec: HeadlineSpec, found: ScoreMetric) -> HeadlineSpec:
    """Fill the scorer (the sample-score column) and, for dict scores, the key from the log."""
    key = spec.sample_key
    if key is None and spec.value != "survival" and found.score != found.scorer:
        key = found.score  # a dict-valued scorer names each score after its value key
    return replace(spec, scorer=found.scorer, score=spec.score or found.score, sample_key=key)


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def cluster_field(raw_scorers: Any, spec: HeadlineSpec) -> str | None:
    """The sample metadata key a headline's scorer clusters its stderr by, if it declares one.

    Args:
        raw_scorers: `log.eval.scorers` as read (a JSON list of scorers and their metrics).
        spec: The resolved headline (its scorer and score key).

    Returns:
        The `cluster` option of a stderr metric on the headline's score, else None.
    """
    scorers = _json(raw_scorers)
    for entry in scorers if isinstance(scorers, list) else []:
        if not isinstance(entry, dict) or _short(str(entry.get("name"))) != _short(
            str(spec.scorer)
        ):
            continue
        metrics = entry.get("metrics")
        keys = [k for k in (spec.sample_key, spec.score) if k]
        found: list[Any] = []
        if isinstance(metrics, dict):
            found = [m for key in keys for m in metrics.get(key) or []]
        elif isinstance(metrics, list):
            for item in metrics:
                if isinstance(item, dict) and "name" not in item:
                    found += [m for key in keys for m in item.get(key) or []]
                else:
                    found.append(item)
        for metric in found:
            options = metric.get("options") if isinstance(metric, dict) else None
            if _short(str((metric or {}).get("name"))) == "stderr" and isinstance(options, dict):
                if isinstance(options.get("cluster"), str):
                    return str(options["cluster"])
    return None


def _parse_score(raw: Any) -> Any:
    if isinstance(raw, str) and raw.startswith("{"):
        return _json_dict(raw)
    return raw


def sample_value(value: Any, spec: HeadlineSpec) -> float | None:
    """The headline part of one sample score (binary/continuous), None when it has none."""
    if isinstance(value, dict):
        key = spec.sample_key or spec.score
        if key is None or key not in value:
            return None
        value = value[key]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    try:
        return number(to_float(value))
    except (ValueError, TypeError):
        return None


def sample_observation(value: Any, spec: HeadlineSpec) -> tuple[float, int] | None:
    """(time, event) of one sample score for a survival headline, None when incomplete."""
    if not isinstance(value, dict):
        return None
    time = number(value.get(spec.time_key or ""))
    event = value.get(spec.event_key or "")
    event_number = number(event)
    if time is None or event_number is None:
        return None
    return time, int(event_number > 0)


def compute_values(run: Run) -> None:
    """Per-sample values (or observations) and categories from `raw_scores`."""
    spec = run.headline
    if spec is None:
        return
    run.samples, run.observations = {}, {}
    if spec.value == "survival":
        for sample_id, _, value in run.raw_scores:
            obs = sample_observation(value, spec)
            if obs is not None:
                run.observations.setdefault(sample_id, []).append(obs)
    else:
        per_id: dict[str, list[float]] = {}
        for sample_id, _, value in run.raw_scores:
            number_ = sample_value(value, spec)
            if number_ is not None:
                per_id.setdefault(sample_id, []).append(number_)
        run.samples = {k: sum(v) / len(v) for k, v in sorted(per_id.items())}
        run.headline = spec = with_kind(spec, [x for v in per_id.values() for x in v])
    run.categories = category_means(run)
    valued = run.observations if spec.value == "survival" else run.samples
    run.valueless = len({sample_id for sample_id, _, _ in run.raw_scores} - set(valued))


def unify_kinds(runs: list[Run]) -> None:
    """Runs compared with each other get one value kind: an inferred kind (undeclared headline)
    is binary only when every run's values are 0/1."""
    inferred = [r for r in runs if r.headline is not None and r.headline.source != "task"]
    if not inferred or any(r.value_kind == "survival" for r in inferred):
        return
    kind = "binary" if all(r.value_kind == "binary" for r in inferred) else "continuous"
    for run in inferred:
        assert run.headline is not None
        run.headline = replace(run.headline, value=kind)


def category_means(run: Run) -> dict[str, dict[str, float | int | None]]:
    """Headline per category (mean, or Kaplan-Meier for survival) and its sample count."""
    if run.category_field is None:
        return {}
    groups: dict[str, list[str]] = {}
    for sample_id, meta in run.sample_meta.items():
        groups.setdefault(str(meta.get(run.category_field)), []).append(sample_id)
    result: dict[str, dict[str, float | int | None]] = {}
    for cat, ids in sorted(groups.items()):
        if run.value_kind == "survival" and run.headline is not None:
            obs = {k: run.observations[k] for k in ids if k in run.observations}
            value = survival.headline_value(obs, run.headline.horizon or 0)
            result[cat] = {"mean": value, "n": len(obs)}
        else:
            values = [run.samples[k] for k in ids if k in run.samples]
            result[cat] = {"mean": sum(values) / len(values) if values else None, "n": len(values)}
    return result


def recompute_headline(run: Run) -> bool:
    """Recompute the headline from the per-sample values; False when it is not their function."""
    spec = run.headline
    if spec is None:
        return False
    if spec.value == "survival":
        run.headline_value = survival.headline_value(run.observations, spec.horizon or 0)
        return True
    if spec.metric in MEAN_METRICS and run.samples:
        run.headline_value = sum(run.samples.values()) / len(run.samples)
        return True
    return False


def _errored(key: tuple[str, int], health: LogHealth | None, error: str) -> bool:
    """Whether a sample epoch is left out: its health says so; a sample without health (not
    read) when its summary carries an error."""
    if health is None:
        return error != ""
    if health.samples is None:  # the log's health record covers every sample epoch
        return key in health.errored
    found = health.samples.get(key)
    return found.errored if found is not None else error != ""


def _attach_samples(run: Run, samples: pd.DataFrame, health: LogHealth | None) -> None:
    run.sample_count = int(samples["id"].nunique()) if not samples.empty else 0
    if samples.empty:
        return
    errors = samples["error"].fillna("").astype(str) if "error" in samples else None
    meta_field = next(
        (
            f
            for f in CATEGORY_FIELDS
            if f"metadata_{f}" in samples.columns and samples[f"metadata_{f}"].notna().any()
        ),
        None,
    )
    run.category_field = meta_field
    spec = run.headline
    column = f"score_{spec.scorer}" if spec is not None and spec.scorer else None
    cluster_column = f"metadata_{run.cluster_field}" if run.cluster_field else None
    if cluster_column is not None and cluster_column not in samples.columns:
        run.notes.append(f"clusters by {run.cluster_field} declared, but no sample carries it")
        run.cluster_field = cluster_column = None
    for index, row in samples.iterrows():
        sample_id = str(row["id"])
        if meta_field is not None:
            run.sample_meta[sample_id] = {meta_field: row.get(f"metadata_{meta_field}")}
        if cluster_column is not None and _text(row.get(cluster_column)):
            run.clusters[sample_id] = _text(row.get(cluster_column))
        key = (sample_id, int(number(row.get("epoch")) or 1))
        if _errored(key, health, errors.loc[index] if errors is not None else ""):
            run.errored_samples += 1
            continue
        if column is None or column not in samples.columns:
            continue
        parsed = _parse_score(row[column])
        run.raw_scores.append((sample_id, int(number(row.get("epoch")) or 1), parsed))
        if isinstance(parsed, dict):
            iou = number(parsed.get(IOU_KEY))
            if iou is not None:
                run.ious.append(iou)


def _unscored_reason(run: Run) -> str | None:
    rows = run.health.samples or run.sample_count
    # `docket suite` ends a log whose samples errored as `error` (so the next run resumes
    # them): its other samples are still scored, the errored ones counted and left out
    sample_errors = run.status == "error" and bool(run.score_metrics) and run.errored_samples > 0
    if run.status != "success" and not sample_errors:
        return f"{run.status}: {run.error}" if run.error else f"status {run.status}"
    if rows and run.errored_samples >= rows:
        return errored_text(run.health) or f"all {run.sample_count} samples errored"
    if not run.score_metrics:
        return "no scorer: the log has no scores"
    if run.headline is None:
        return "no headline metric"
    if _find_metric(run, run.headline) is None:
        found = ", ".join(sorted({f"{m.score}/{m.metric}" for m in run.score_metrics}))
        return f"headline {run.headline.name} not in the log's metrics ({found})"
    if run.headline_value is None:
        behind = "; ".join(failure_parts(run.health) + _truncation(run.health))
        behind = f" ({behind})" if behind else ""
        if run.n == 0:
            return f"headline {run.headline.name} is NaN: no sample has a value for it{behind}"
        return f"headline {run.headline.name} is NaN{behind}"
    return None


def _truncation(health: RunHealth) -> list[str]:
    if not health.truncated:
        return []
    roles = ", ".join(f"{role} {n}" for role, n in health.truncated_by_role.items())
    return [f"replies truncated at max_tokens in {health.truncated} samples ({roles})"]


def _exclude_no_answer(run: Run) -> None:
    """Take samples that hit a limit before the model ever answered out of the headline Inspect
    computed with them (an errored sample Inspect already left out)."""
    if run.headline is None or run.headline_value is None or run.health.scored_no_answer == 0:
        return
    excluded = errored_text(run.health)
    run.headline_stderr = None
    if recompute_headline(run):
        run.notes.append(f"{excluded}: left out, headline recomputed from {run.n} samples")
        return
    run.headline_value = None
    run.notes.append(
        f"{excluded}: {run.headline.name} is not a mean of the samples, so it cannot be "
        "recomputed without them"
    )


def _model_free(run: Run, metadata: dict[str, Any]) -> bool:
    """A declared model-free task (guarded by the log), or a run with no model call at all."""
    calls = run.health.model_events
    if metadata.get(MODEL_FREE_KEY) is True:
        if calls > 0:
            run.notes.append(
                f"declares {MODEL_FREE_KEY}, but its samples made {calls} model calls: shown "
                "as the model's row"
            )
        return calls == 0
    # samples that all errored before any model call say nothing about the task
    return run.health.samples > run.health.errored and calls == 0


def build_runs(
    loaded: LoadedLogs, headline_flags: dict[str, HeadlineSpec] | None = None
) -> list[Run]:
    """One `Run` per row identity (the newest successful log), older ones in `superseded`.

    Args:
        loaded: The logs read by `load_logs`.
        headline_flags: Headline metrics chosen on the command line, by task; they override
            the headline a task declares.

    Returns:
        The runs, with their headline values resolved.
    """
    if loaded.evals.empty:
        return []
    flags = headline_flags or {}
    runs: list[Run] = []
    for _, row in loaded.evals.drop_duplicates("eval_id", keep="last").iterrows():
        run = run_from_row(row)
        run.headline = resolve_headline(run, row, flags)
        found = None if run.headline is None else _find_metric(run, run.headline)
        if run.headline is not None and found is not None:
            run.headline = _complete(run.headline, found)
            run.cluster_field = cluster_field(row.get("docket_scorers"), run.headline)
            run.headline_value = found.value
            run.headline_stderr = next(
                (
                    m.value
                    for m in run.score_metrics
                    if (m.score, m.scorer, m.metric) == (found.score, found.scorer, "stderr")
                ),
                None,
            )
        health = loaded.health.get(str(row["eval_id"]))
        run.health = health.run if health is not None else RunHealth()
        run.model_free = _model_free(run, _json_dict(row.get("docket_metadata")))
        if not loaded.samples.empty:
            _attach_samples(
                run, loaded.samples[loaded.samples["eval_id"] == row["eval_id"]], health
            )
        compute_values(run)
        _exclude_no_answer(run)
        run.method_counters = dict(loaded.counters.get(str(row["eval_id"]), {}))
        run.unscored_reason = _unscored_reason(run)
        runs.append(run)
    kept = newest_only(runs)
    loaded.warnings.extend(same_run_twice(kept))
    return kept


def _written_ns(log: str) -> int:
    """When a local log file was last written (ns); 0 elsewhere. Breaks ties between logs created
    in the same second (Inspect's `created` has one-second resolution)."""
    path = log.removeprefix("file://")
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def same_run_twice(runs: list[Run]) -> list[LogWarning]:
    """Logs that claim the run another log of the same identity is: created in the same second.

    The run kept is still the one written last (`newest_only`); each such pair is named, and the
    kept run carries a note, so neither silently replaces the other.
    """
    warnings: list[LogWarning] = []
    for run in runs:
        when = created_at(run.created)
        for other in run.superseded:
            if when is None or other.status != run.status or created_at(other.created) != when:
                continue
            text = f"claims the same run as {other.log} (same row, created in the same second)"
            run.notes.append(f"{text}; the log written last is shown")
            warnings.append(LogWarning(run.log, f"{text}: the log written last is counted"))
    return warnings


def newest_only(runs: list[Run]) -> list[Run]:
    """Keep the newest successful log per identity; the others become its `superseded`."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.identity, []).append(run)
    kept: list[Run] = []
    for group in groups.values():
        ordered = sorted(
            group, key=lambda r: (r.status == "success", r.created, _written_ns(r.log))
        )
        newest = ordered[-1]
        newest.superseded = list(reversed(ordered[:-1]))
        kept.append(newest)
    return sorted(kept, key=lambda r: (r.benchmark, r.task, r.version, r.model_label, r.identity))
