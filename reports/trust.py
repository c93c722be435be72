"""Logs that claim more than a log can: screened before any of them becomes a run.

Of several logs of one row identity, reports count the newest (`docket.reports.runs`), so a
log's `created` and `eval_id` decide which run is genuine. Both are plain fields anyone can
write. The rules, each named in one warning line (printed to stderr and shown in the report):

- **Future-dated**: a log `created` later than now plus `CLOCK_SKEW` is left out. No eval
  finishes before it starts, so such a log is forged or from a wrong clock; either way it must
  not become the newest run.
- **Duplicate `eval_id`**: Inspect gives every eval (every retry too) an id of its own. Copies of
  one log (the same content under several paths) count once. Logs that share an id but differ
  are all left out: neither can be told to be the genuine one, and neither silently wins.
- **Same run twice** (`docket.reports.runs.newest_only`): two logs of one row identity created in
  the same second with different ids are named; the kept one is the one written last, as before.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

#: How far a log's `created` may lie ahead of this machine's clock before it is left out.
CLOCK_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class LogWarning:
    """A log that was left out, or is in doubt, and why."""

    path: str
    message: str
    #: False for a note that changes no number (a copy counted once); `docket regress` cannot
    #: pass while a blocking warning stands.
    blocking: bool = True

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def created_at(value: Any) -> datetime | None:
    """A log's `created` as an aware datetime (naive ones taken as UTC), or None."""
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if pd.isna(stamp):
        return None
    moment: datetime = stamp.to_pydatetime()
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _digest(evals: pd.DataFrame, samples: pd.DataFrame, path: str) -> str:
    """A hash of everything one log says (its path left out), to tell copies from forgeries."""
    row = evals[evals["log"] == path].drop(columns=["log"]).iloc[0]
    parts: list[Any] = [{k: str(v) for k, v in row.items()}]
    if not samples.empty and "log" in samples:
        mine = samples[samples["log"] == path].drop(columns=["log"])
        parts.append(mine.astype(str).to_dict(orient="records"))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


#: The suffix Inspect gives the log it recovers from a killed run's sample buffer.
RECOVERED_SUFFIX = "-recovered"


def _recovered_original(group: pd.DataFrame) -> tuple[str, str] | None:
    """(original, recovery) when two logs of one eval id are a killed run and its recovery.

    Inspect resumes a run killed mid-way by writing `NAME-recovered.eval` from the dead
    process's sample buffer next to `NAME.eval`, which stays `started` with the same eval id.
    Only that exact pair is read as one run; any other pair stays disputed.
    """
    if len(group) != 2 or "status" not in group:
        return None
    rows = {
        str(path): str(status) for path, status in zip(group["log"], group["status"], strict=True)
    }
    for path, status in rows.items():
        stem, dot, extension = path.rpartition(".")
        recovery = f"{stem}{RECOVERED_SUFFIX}{dot}{extension}"
        if status == "started" and recovery in rows:
            return path, recovery
    return None


def screen(
    evals: pd.DataFrame, samples: pd.DataFrame, now: datetime | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[LogWarning]]:
    """Leave out future-dated logs and disputed eval ids; drop the extra copies of a log.

    Args:
        evals: One row per log (`evals_df`, with `eval_id`, `log` and `created`).
        samples: One row per sample epoch (`samples_df`, with `eval_id` and `log`).
        now: The present (the machine's clock when None).

    Returns:
        The eval rows and sample rows kept, and one warning per log left out or in doubt.
    """
    if evals.empty:
        return evals, samples, []
    limit = (now or datetime.now(UTC)) + CLOCK_SKEW
    warnings: list[LogWarning] = []
    dropped: set[str] = set()
    for path, created in zip(evals["log"], evals["created"], strict=True):
        moment = created_at(created)
        if moment is not None and moment > limit:
            dropped.add(str(path))
            warnings.append(
                LogWarning(
                    str(path),
                    f"left out: created {moment.isoformat()}, later than now "
                    f"({limit - CLOCK_SKEW:%Y-%m-%d %H:%M} UTC) plus {CLOCK_SKEW}",
                )
            )
    current = evals[~evals["log"].isin(dropped)]
    for eval_id, group in current.groupby("eval_id", sort=True):
        paths = sorted(str(p) for p in group["log"])
        if len(paths) < 2:
            continue
        recovered = _recovered_original(group)
        if recovered is not None:
            dropped.add(recovered[0])
            warnings.append(
                LogWarning(recovered[0], f"superseded by Inspect's recovery {recovered[1]}", False)
            )
            continue
        digests = {_digest(current, samples, p) for p in paths}
        if len(digests) == 1:
            dropped.update(paths[1:])
            for path in paths[1:]:
                warnings.append(
                    LogWarning(
                        path, f"a copy of {paths[0]} (eval_id {eval_id}): counted once", False
                    )
                )
            continue
        dropped.update(paths)
        for path in paths:
            others = ", ".join(p for p in paths if p != path)
            warnings.append(
                LogWarning(
                    path,
                    f"left out: eval_id {eval_id} is also claimed by {others} with different "
                    "contents; neither is taken as genuine",
                )
            )
    kept_evals = evals[~evals["log"].isin(dropped)].reset_index(drop=True)
    kept_samples = samples
    if not samples.empty and "log" in samples:
        kept_samples = samples[~samples["log"].isin(dropped)].reset_index(drop=True)
    return kept_evals, kept_samples, warnings
