"""Every time limit a suite run applies, with where it came from (`docket suite --dry-run`).

A run's eval arguments come in layers: the preset's `eval_args`, its stage's, the command line's
flags (`--time-limit`, `--attempt-timeout`, ...) and `--limit`; each key keeps the name of the
layer that set it. Inspect's request `timeout` bounds a whole model request, retries included,
while `attempt_timeout` bounds one attempt: a `timeout` below `attempt_timeout x (max_retries +
1)` ends a slow first attempt before its retry can start (or ends the attempt itself), so the
suite raises it when the command line asked for the longer attempts, and says so. Inspect also
gives the scorers half the sample's `time_limit` (a judge's calls included): the line names that
too, because it is the `Time limit exceeded. limit: 150.0 seconds` of a run with
`--time-limit 300`.
"""

from __future__ import annotations

import inspect as pyinspect
from typing import TYPE_CHECKING, Any, get_args, get_type_hints

from docket import endpoints

if TYPE_CHECKING:
    from docket.suite import TaskPlan

#: The command-line flag of each eval argument the suite's flags set.
FLAGS = {
    "max_tokens": "--max-tokens",
    "max_connections": "--max-connections",
    "attempt_timeout": "--attempt-timeout",
    "time_limit": "--time-limit",
    "limit": "--limit",
}

#: Attempts assumed when `max_retries` is unset (Inspect then retries without end).
UNSET_RETRY_ATTEMPTS = 2


def merge_eval_args(
    layers: list[tuple[str, dict[str, Any]]],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Merge eval-argument layers in order (a later one wins) and name each key's source.

    Args:
        layers: `(source, arguments)` pairs; an empty source means the command line's flags
            (each key is then named by its flag, `--time-limit`).

    Returns:
        The merged arguments (the request `timeout` fitted to the attempts, see
        `fit_request_timeout`) and the source of each.
    """
    args: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, layer in layers:
        for key, value in layer.items():
            args[key] = value
            sources[key] = source or FLAGS.get(key, f"--{key.replace('_', '-')}")
    fit_request_timeout(args, sources)
    return args, sources


def fit_request_timeout(args: dict[str, Any], sources: dict[str, str]) -> None:
    """Raise a request `timeout` that would cut the attempts `attempt_timeout` allows.

    The timeout becomes `attempt_timeout x (max_retries + 1)` when it is shorter and either
    `attempt_timeout` came from the command line or the timeout is no longer than one attempt
    (then no retry could ever start). Both are changed in place.

    Args:
        args: Merged eval arguments.
        sources: Their sources (the timeout's is rewritten to say why it changed).
    """
    attempt, timeout = args.get("attempt_timeout"), args.get("timeout")
    if attempt is None or timeout is None:
        return
    retries = args.get("max_retries")
    attempts = retries + 1 if retries is not None else UNSET_RETRY_ATTEMPTS
    needed = int(attempt) * attempts
    from_flag = sources.get("attempt_timeout", "").startswith("--")
    if timeout >= needed or not (from_flag or timeout <= attempt):
        return
    args["timeout"] = needed
    sources["timeout"] = (
        f"raised from {timeout} ({sources.get('timeout', '?')}) to attempt_timeout {attempt} "
        f"x {attempts} attempts, so a slow first attempt can be retried"
    )


def _task_limits(item: TaskPlan) -> list[str]:
    """The task's own time parameters (`tool_timeout`, ...), its `-T config=` knobs included:
    value and source."""
    from inspect_ai._util.registry import registry_lookup

    found = registry_lookup("task", item.task)
    try:
        parameters = pyinspect.signature(found).parameters if callable(found) else {}
    except (ValueError, TypeError):
        parameters = {}
    lines = []
    for name, parameter in parameters.items():
        if not _is_time(name):
            continue
        if name in item.task_args:
            source = "-T" if name in item.forced_task_args else "the preset's task_args"
            value = item.task_args[name]
        else:
            source, value = "task default", parameter.default
        lines.append(f"-T {name}={value} s ({source})")
    if "config" in parameters and callable(found):
        lines += _config_limits(item, found)
    return lines


def _is_time(name: str) -> bool:
    return name.endswith("timeout") or name.endswith("time_limit")


def _config_limits(item: TaskPlan, found: Any) -> list[str]:
    """The time knobs of the task's `-T config=` model: from the run's config, else defaults."""
    from docket.core.inspect_private import PrerequisiteError
    from docket.core.task_config import TaskConfig, task_config

    try:
        hints = get_type_hints(pyinspect.unwrap(found))
    except (NameError, TypeError):
        return []
    models = [t for t in get_args(hints.get("config")) if isinstance(t, type)]
    model = next((t for t in models if issubclass(t, TaskConfig)), None)
    if model is None:
        return []
    given = item.task_args.get("config")
    where = "-T" if "config" in item.forced_task_args else "the preset's task_args"
    try:
        knobs = task_config(item.task, model, given)
    except PrerequisiteError:
        return []  # the task stops with that line when it is built
    chosen = knobs.changed()
    lines = []
    for name in model.model_fields:
        if _is_time(name):
            source = f"{where} config" if name in chosen else "task default"
            lines.append(f"config {name}={getattr(knobs, name)} s ({source})")
    return lines


def limit_line(item: TaskPlan) -> str:
    """Every time limit `item` runs under, each with its source, on one line.

    Args:
        item: One planned eval_set.

    Returns:
        `time limits: time_limit 600 s per sample (preset api); scoring 300 s (...); ...`.
    """
    args, sources = item.eval_args, item.arg_sources

    def given(key: str, what: str) -> str:
        if args.get(key) is None:
            return f"{key} none ({what}; Inspect's default)"
        return f"{key} {args[key]} s {what} ({sources.get(key, '?')})"

    parts = [given("time_limit", "per sample")]
    if args.get("time_limit") is not None:
        parts.append(
            f"scoring {args['time_limit'] / 2:g} s (Inspect: half the sample's time_limit, "
            "for the scorers and their judge calls)"
        )
    if args.get("working_limit") is not None:
        parts.append(given("working_limit", "of work per sample"))
    parts.append(given("attempt_timeout", "per model-call attempt"))
    parts.append(given("timeout", "per model request, retries included"))
    if args.get("max_retries") is not None:
        parts.append(f"max_retries {args['max_retries']} ({sources.get('max_retries', '?')})")
    parts.extend(_task_limits(item))
    time_limit, attempt = args.get("time_limit"), args.get("attempt_timeout")
    if time_limit is not None and attempt is not None and time_limit < attempt:
        parts.append(f"note: the time_limit ends a sample before one {attempt} s attempt can")
    network = [m for m in [*item.models, *item.roles.values()] if endpoints.is_network(m.model)]
    if network:
        parts.append(f"probe {endpoints.PROBE_TIMEOUT:g} s per network model (docket, before run)")
    return "time limits: " + "; ".join(parts)
