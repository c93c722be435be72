"""Trajectory sources for `docket/correct_localization`: the shipped split, local Who&When or
CORRECT-Error files, or a Hugging Face dataset id (only when asked for, and only with network).

The shipped split (`data/mas_trajectories.jsonl.gz`) is 2 400 trajectories of
`docket.benchmarks.correct.simulator`, generated with seed 2026 and split in halves by a hash of
the id (`split_for`); a fifth of them form the long subset (60 steps or more, `tier=long`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from inspect_ai.dataset import Sample

from docket.benchmarks.correct.prompts import render_history
from docket.benchmarks.correct.simulator.generate import split_for
from docket.benchmarks.correct.simulator.records import (
    Trajectory,
    TrajectoryError,
    parse_record,
    read_trajectories,
)
from docket.benchmarks.correct.simulator.tasks import length_tier
from docket.core.inspect_private import PrerequisiteError
from docket.core.splits import MANIFEST, files_digest, read_manifest, split_metadata

SPLIT_FILE = "mas_trajectories.jsonl.gz"
SHIPPED = Path(__file__).parent / "data" / SPLIT_FILE
#: Short names for the public datasets (Hugging Face ids).
HF_ALIASES = {"whoandwhen": "Kevin355/Who_and_When", "correct-error": "yifanyu/CORRECT-Error"}
SPLITS = ("train", "test", "all")
TIERS = ("short", "medium", "long")


@functools.lru_cache(maxsize=1)
def _shipped() -> tuple[Trajectory, ...]:
    """The shipped trajectories, parsed once per process (they are frozen dataclasses)."""
    return tuple(read_trajectories(SHIPPED))


def is_generated(data: str) -> bool:
    """Whether `data` is a split written by `docket generate correct` (a folder with a manifest)."""
    return bool(data) and not data.startswith("hf:") and (Path(data) / MANIFEST).is_file()


def split_file(data: Path) -> Path:
    """The trajectory file of a generated split's folder; any other path as it is."""
    return data / SPLIT_FILE if (data / MANIFEST).is_file() else data


def check_generated(data: str) -> dict[str, object]:
    """The manifest of a generated split, checked (one line on a bad or foreign split).

    Args:
        data: A folder written by `docket generate correct`.

    Returns:
        The manifest (benchmark, sha256, source).

    Raises:
        PrerequisiteError: No or a stale manifest, another benchmark's split, or no trajectory
            file.
    """
    try:
        manifest = read_manifest(Path(data))
    except ValueError as ex:
        raise PrerequisiteError(f"correct_localization: -T data={data}: {ex}") from None
    if manifest.get("benchmark") != "correct":
        raise PrerequisiteError(
            f"correct_localization: -T data={data} is a split of {manifest.get('benchmark')!r}, "
            "not of correct"
        )
    if not (Path(data) / SPLIT_FILE).is_file():
        raise PrerequisiteError(f"correct_localization: -T data={data} has no {SPLIT_FILE}")
    return manifest


def data_split(data: str) -> dict[str, dict[str, str]]:
    """The `split_metadata` of the shipped split ('') or a generated one; {} for other data."""
    if not data:
        return split_metadata(files_digest(SHIPPED.parent, [SHIPPED]), generated=False)
    if is_generated(data):
        sha256 = str(check_generated(data)["sha256"])
        return split_metadata(sha256, generated=True, name=Path(data).name)
    return {}


def load_trajectories(data: str = "", hf_name: str = "", hf_split: str = "") -> list[Trajectory]:
    """Trajectories from `data`: '' (shipped split), a file or folder, or `hf:<id or alias>`.

    A folder written by `docket generate correct` is checked against its manifest first.
    """
    try:
        if not data:
            return list(_shipped())
        if data.startswith("hf:"):
            return load_hf(data[3:], hf_name, hf_split or "train")
        if is_generated(data):
            check_generated(data)
            return read_trajectories(Path(data) / SPLIT_FILE)
        return read_trajectories(data)
    except TrajectoryError as ex:
        raise PrerequisiteError(f"correct_localization: {ex}") from None


def load_hf(dataset: str, name: str, split: str) -> list[Trajectory]:
    """Rows of a Hugging Face dataset (needs the `datasets` package and network access)."""
    try:
        from datasets import load_dataset  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise PrerequisiteError(
            "correct_localization: -T data=hf:... needs `pip install datasets` and network "
            "access; or download the files and pass -T data=PATH"
        ) from None
    path = HF_ALIASES.get(dataset, dataset)
    rows = load_dataset(path, name or None, split=split)
    source = f"hf:{path}{'/' + name if name else ''}:{split}"
    return [parse_record(dict(row), source, i) for i, row in enumerate(rows)]


def split_of(trajectory: Trajectory) -> str:
    """The trajectory's `split` field, else `train`/`test` by the parity of a hash of its id."""
    split = trajectory.metadata.get("split")
    return str(split) if split in ("train", "test") else split_for(trajectory.id)


def tier_of(trajectory: Trajectory) -> str:
    """The trajectory's `tier` field, else its length tier (short <= 15 < medium < 60 <= long)."""
    tier = trajectory.metadata.get("tier")
    return str(tier) if tier in TIERS else length_tier(len(trajectory.history))


def select(
    trajectories: list[Trajectory], split: str, size: int = 0, tier: str = "all"
) -> list[Trajectory]:
    """The trajectories of one split and tier (`all`: every one), the first `size` when > 0."""
    chosen = [
        t
        for t in trajectories
        if (split == "all" or split_of(t) == split) and (tier == "all" or tier_of(t) == tier)
    ]
    return chosen[:size] if size > 0 else chosen


def data_hash(trajectories: list[Trajectory]) -> str:
    """A short fingerprint of a data set (ids, problems, logs and labels)."""
    digest = hashlib.sha256()
    for t in trajectories:
        record = [t.id, t.question, [(s.name, s.content) for s in t.history]]
        digest.update(json.dumps([*record, t.mistake_agent, t.mistake_step]).encode())
    return digest.hexdigest()[:16]


def to_sample(trajectory: Trajectory) -> Sample:
    """One sample: the log as input, the gold {agent, step} as target, the record as metadata."""
    return Sample(
        id=trajectory.id,
        input=f"Problem: {trajectory.question}\n{render_history(trajectory)}",
        target=json.dumps({"agent": trajectory.mistake_agent, "step": trajectory.mistake_step}),
        metadata={
            "error_type": str(trajectory.metadata.get("error_type", "unknown")),
            "task_family": str(
                trajectory.metadata.get(
                    "task_family", trajectory.metadata.get("dataset", "unknown")
                )
            ),
            "mistake_agent": trajectory.mistake_agent,
            "mistake_step": trajectory.mistake_step,
            "mistake_reason": trajectory.mistake_reason,
            "steps": len(trajectory.history),
            "tier": tier_of(trajectory),
        },
    )
