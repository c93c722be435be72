"""Remove the logs an eval_set's finished logs supersede, keyed on the logs it returned.

Inspect's eval_set sweeps a task's older logs after its retries (`retry_cleanup`) and keeps the
one with the newest modification time. An object store lists modification times to the second,
so a unit that finishes within the second of its crash recovery (`NAME-recovered.eval`) ties
with that recovery, and the sweep can remove the finished log and keep the recovery. docket runs
eval_set with `retry_cleanup=False` and sweeps here instead: the logs eval_set returned are the
ones kept, whatever the clock says.
"""

from __future__ import annotations

from collections.abc import Iterable

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from docket.core import logstore


def superseded_logs(log_dir: str, finished: Iterable[EvalLog]) -> list[str]:
    """The logs in `log_dir` of the tasks in `finished` that the finished logs replace.

    A log is superseded when it has the task id of a returned log, is not that log, and is not a
    `started` log: a started log may still be written by another process (a concurrent shard),
    and a killed one is left for the report, which reads it beside the finished log. A file
    whose header cannot be read is left for the report to name.

    Args:
        log_dir: The eval_set's log directory, local or remote.
        finished: The logs eval_set returned (their `location` is kept).

    Returns:
        The superseded logs' locations, sorted.
    """
    kept = {logstore.resolve(log.location): log.eval.task_id for log in finished if log.location}
    task_ids = set(kept.values())
    found = []
    for info in list_eval_logs(log_dir, recursive=True):
        if logstore.resolve(info.name) in kept or info.task_id not in task_ids:
            continue
        try:
            header = read_eval_log(info.name, header_only=True)
        except Exception:  # noqa: BLE001 - gone, or not a log Inspect can read: left as it is
            continue
        if header.eval.task_id in task_ids and header.status != "started":
            found.append(logstore.resolve(info.name))
    return sorted(found)


def remove_superseded(log_dir: str, finished: Iterable[EvalLog]) -> list[str]:
    """Remove the logs `finished` supersede (see `superseded_logs`).

    Args:
        log_dir: The eval_set's log directory, local or remote.
        finished: The logs eval_set returned.

    Returns:
        The locations removed.
    """
    removed = superseded_logs(log_dir, finished)
    for location in removed:
        logstore.remove(location)
    return removed
