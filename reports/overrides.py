"""Human overrides of sample scores (`docket report --overrides FILE`).

A reviewer who disagrees with a scorer (e.g. a judge that misread a refusal) records the
correction in a YAML or JSON file; the report applies it before any number is computed, marks
the overridden cells and lists every override with its reviewer and reason:

    format: docket-overrides/1
    overrides:
      - task: docket/anchor_audit      # task name as in the report
        sample_id: "s03"
        key: complied                  # score-dict key to replace; omit for a scalar score
        value: 0
        reviewer: alice
        reason: the target refused; the judge misread the transcript
        model: docket/scripted policy=comply   # optional: only this row's model (default: all)
        epoch: 1                               # optional: only this epoch (default: all)

The headline is recomputed from the overridden per-sample values when it is their mean
(accuracy, mean) or a survival headline (Kaplan-Meier); otherwise the cells are marked and the
report notes that the log's headline was kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.reports.files import load_document
from docket.reports.runs import Run, compute_values, recompute_headline

OVERRIDES_FORMAT = "docket-overrides/1"
REQUIRED = ("task", "sample_id", "value", "reviewer", "reason")


class OverrideError(ValueError):
    """An overrides file that cannot be used (one line naming the file and entry)."""


@dataclass(frozen=True)
class Override:
    """One reviewed correction of one sample's score."""

    task: str
    sample_id: str
    value: Any
    reviewer: str
    reason: str
    key: str | None = None
    model: str | None = None
    epoch: int | None = None

    def matches(self, run: Run) -> bool:
        """True for a run of this override's task (and model, when given)."""
        return run.task == self.task and (self.model is None or run.model_label == self.model)


def read_overrides(path: str | Path) -> list[Override]:
    """Parse and validate an overrides file."""
    source = Path(path)
    data = load_document(source, OverrideError, "overrides file", OVERRIDES_FORMAT)
    entries = data.get("overrides")
    if not isinstance(entries, list):
        raise OverrideError(f"{source}: field 'overrides' must be a list")
    found: list[Override] = []
    for index, entry in enumerate(entries):
        where = f"{source}: overrides[{index}]"
        if not isinstance(entry, dict):
            raise OverrideError(f"{where} must be a mapping")
        missing = [f for f in REQUIRED if entry.get(f) in (None, "")]
        if missing:
            raise OverrideError(f"{where} lacks field '{missing[0]}'")
        value = entry["value"]
        if isinstance(value, (dict, list)):
            raise OverrideError(f"{where} field 'value' must be a scalar")
        epoch = entry.get("epoch")
        if epoch is not None and (isinstance(epoch, bool) or not isinstance(epoch, int)):
            raise OverrideError(f"{where} field 'epoch' must be an int")
        unknown = set(entry) - {*REQUIRED, "key", "model", "epoch"}
        if unknown:
            raise OverrideError(f"{where} has unknown field '{sorted(unknown)[0]}'")
        found.append(
            Override(
                task=str(entry["task"]),
                sample_id=str(entry["sample_id"]),
                value=value,
                reviewer=str(entry["reviewer"]),
                reason=str(entry["reason"]),
                key=None if entry.get("key") is None else str(entry["key"]),
                model=None if entry.get("model") is None else str(entry["model"]),
                epoch=epoch,
            )
        )
    return found


def _apply_one(run: Run, override: Override) -> int:
    applied = 0
    for index, (sample_id, epoch, value) in enumerate(run.raw_scores):
        if sample_id != override.sample_id:
            continue
        if override.epoch is not None and epoch != override.epoch:
            continue
        if override.key is not None:
            if not isinstance(value, dict):
                continue
            new: Any = {**value, override.key: override.value}
        else:
            new = override.value
        run.raw_scores[index] = (sample_id, epoch, new)
        applied += 1
    return applied


def apply_overrides(runs: list[Run], overrides: list[Override]) -> list[str]:
    """Apply every override to the matching runs; returns one note per override that matched
    nothing (nothing else is changed for it)."""
    notes: list[str] = []
    touched: set[int] = set()
    for override in overrides:
        hits = 0
        for i, run in enumerate(runs):
            if not override.matches(run):
                continue
            count = _apply_one(run, override)
            if count:
                hits += count
                touched.add(i)
                run.overrides.append({**override.__dict__, "epochs_changed": count})
        if not hits:
            notes.append(
                f"override not applied: no sample {override.sample_id!r} of {override.task}"
                + (f" / {override.model}" if override.model else "")
                + (f" with score key {override.key!r}" if override.key else "")
            )
    for i in sorted(touched):
        run = runs[i]
        compute_values(run)
        if recompute_headline(run):
            run.notes.append(f"headline recomputed after {len(run.overrides)} override(s)")
        else:
            run.notes.append(
                "overrides marked but the log's headline kept: "
                f"{run.headline.name if run.headline else '?'} is not a per-sample mean"
            )
    return notes
