"""`docket check LOGDIR`: exit 1 when any run in LOGDIR did not finish or any sample errored.

`inspect eval` exits 0 when every sample errored, so `inspect eval ... && docket check logs` is
the CI step that fails then. LOGDIR may be an S3 store (`s3://bucket/prefix`). One line per
problem:

- a run whose status is not `success`: `error` (with Inspect's error line), `cancelled`
  (interrupted), or `started` (the process died, or it is still running);
- samples that errored (Inspect gave up, or `docket suite` wrote them back as unanswered), and
  samples Inspect scored although the model under test never answered
  (`docket.core.errored.unanswered_reason`: every call failed, or a limit hit before any call
  succeeded), which a score would count as wrong answers.

When an eval set retried a task, only the newest log of each task id counts. Text from the logs
(error messages) is printed on one line without control characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from inspect_ai.log import (
    EvalLog,
    EvalSample,
    list_eval_logs,
    read_eval_log,
    read_eval_log_samples,
)

from docket.core import logstore
from docket.core.errored import unanswered_reason

#: Sample ids named on a problem line before `...`.
SHOWN_IDS = 5

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def one_line(text: object) -> str:
    """`text` on one line: control characters (C0, ESC, DEL, C1) become single spaces.

    Args:
        text: Anything printable with `str`, e.g. an error message from a log.

    Returns:
        The text with each run of control characters and whitespace as one space, stripped.
    """
    return " ".join(_CONTROL.sub(" ", str(text)).split())


def first_line(text: object) -> str:
    """The first non-empty line of `text`, through `one_line` ("no message" when empty)."""
    lines = [line for line in str(text or "").splitlines() if line.strip()]
    return one_line(lines[0]) if lines else "no message"


@dataclass(frozen=True)
class RunCheck:
    """What `docket check` found in one log.

    Attributes:
        log: The log's file name.
        task: The task's name (`docket/smoke`).
        model: The model under test.
        problems: One line each; empty when the run finished and no sample errored.
        samples: Samples read from the log.
    """

    log: str
    task: str
    model: str
    problems: tuple[str, ...]
    samples: int

    def lines(self) -> list[str]:
        """The problems, each prefixed with the task, the model and the log file."""
        return [f"{self.task} ({self.model}) {self.log}: {p}" for p in self.problems]


def _status_problem(log: EvalLog) -> str | None:
    if log.status == "success":
        return None
    if log.status == "error":
        message = first_line(log.error.message if log.error else "")
        return f"the run failed (status error): {message}"
    if log.status == "cancelled":
        return "the run was interrupted (status cancelled)"
    return f"the run did not finish (status {one_line(log.status)}: killed, or still running)"


def _ids(samples: list[EvalSample]) -> str:
    ids = [one_line(s.id) for s in samples[:SHOWN_IDS]]
    return ", ".join(ids) + (", ..." if len(samples) > SHOWN_IDS else "")


def _sample_problems(samples: list[EvalSample]) -> list[str]:
    total = len(samples)
    errored = [s for s in samples if s.error is not None]
    unanswered = [(s, r) for s in samples if (r := unanswered_reason(s)) is not None]
    found = []
    if errored:
        first = errored[0].error
        reason = first_line(first.message if first is not None else "")
        found.append(f"{len(errored)} of {total} samples errored (ids {_ids(errored)}): {reason}")
    if unanswered:
        found.append(
            f"{len(unanswered)} of {total} samples were scored although the model never "
            f"answered (ids {_ids([s for s, _ in unanswered])}): {one_line(unanswered[0][1])}"
        )
    return found


def check_log(path: str) -> RunCheck:
    """Check one log: its status and its samples.

    Args:
        path: The log's location (as `list_eval_logs` names it).

    Returns:
        The log's findings; a log that cannot be read is one problem.
    """
    name = Path(path.removeprefix("file://")).name
    try:
        header = read_eval_log(path, header_only=True)
    except Exception as error:  # noqa: BLE001 - an unreadable log is one line
        return RunCheck(name, "?", "?", (f"unreadable log: {one_line(error)}",), 0)
    problems = [p for p in [_status_problem(header)] if p]
    try:
        samples = list(read_eval_log_samples(path, all_samples_required=False))
    except Exception as error:  # noqa: BLE001 - e.g. a run that died before writing samples
        samples = []
        if header.status == "success":
            problems.append(f"its samples cannot be read: {one_line(error)}")
    problems.extend(_sample_problems(samples))
    task, model = one_line(header.eval.task), one_line(header.eval.model)
    return RunCheck(name, task, model, tuple(problems), len(samples))


def newest_logs(log_dir: Path) -> list[str]:
    """The newest log of each task id under `log_dir` (eval-set retries leave older ones).

    Args:
        log_dir: A directory of Inspect logs (searched recursively).

    Returns:
        Log locations, oldest first.
    """
    newest: dict[str, tuple[str, float, str]] = {}
    for info in list_eval_logs(str(log_dir), recursive=True):
        try:
            header = read_eval_log(info.name, header_only=True)
            key, created = header.eval.task_id, header.eval.created
        except Exception:  # noqa: BLE001 - check_log says it is unreadable
            key, created = info.name, ""
        when = (created, info.mtime or 0.0, info.name)
        if key not in newest or when > newest[key]:
            newest[key] = when
    return [name for *_, name in sorted(newest.values())]


def check(log_dir: str | Path) -> list[RunCheck]:
    """Check every run in `log_dir`.

    Args:
        log_dir: A directory of Inspect logs, or an S3 store (`s3://bucket/prefix`: its logs
            are downloaded once and checked locally, `docket.core.logstore`).

    Returns:
        One RunCheck per task (its newest log).
    """
    with logstore.local_logs(log_dir) as (folder, _):
        return [check_log(path) for path in newest_logs(folder)]
