"""Private test splits of `docket/tabular_anomaly` (`docket generate tabular_anomaly`).

A private split is `splits.jsonl`, one row per (data set, split): the columns, the normal
training rows, the test rows, their labels and anomaly kinds, under an opaque id. The secret
seed draws fresh tables for the two generated data sets (`shop`'s sales and injected anomalies,
PyOD's `generate_data_categorical`) and the train/test partition of every data set. The rows of
`breast_cancer` and `wine` are public (they ship with scikit-learn): only which rows train and
which are tested is private there.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.benchmarks.tabular_anomaly.dataset import (
    DATASETS,
    LOADERS,
    Split,
    Table,
    pyod_categorical,
    shop,
    split,
)
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import read_jsonl, write_jsonl
from docket.methods.anomaly.serialize import Column

SPLIT_FILE = "splits.jsonl"
#: Splits per data set when `--size` is not given (the task's default `-T seeds`).
SPLITS_PER_DATASET = 3
_FIELDS = ("id", "dataset", "columns", "train", "test", "labels", "kinds")


@dataclass(frozen=True)
class StoredSplit:
    """One (data set, split) of a private split file."""

    id: str
    dataset: str
    columns: list[Column]
    part: Split


def _tables(rng: random.Random) -> dict[str, Table]:
    """The four tables, the generated ones drawn from `rng`."""
    fresh: dict[str, Callable[[], Table]] = {
        "shop": lambda: shop(seed=rng.getrandbits(62)),
        "pyod_categorical": lambda: pyod_categorical(seed=rng.getrandbits(31)),
    }
    return {name: fresh.get(name, LOADERS[name])() for name in DATASETS}


def private_splits(seed: int, per_dataset: int) -> list[dict[str, Any]]:
    """The rows of a private split file, deterministic in `seed`.

    Args:
        seed: The secret seed's integer.
        per_dataset: Splits per data set.

    Returns:
        One JSON row per (data set, split), ids `ta-` plus 12 random hex digits.

    Raises:
        ValueError: `per_dataset` below 1.
    """
    if per_dataset < 1:
        raise ValueError(f"--size {per_dataset} must be at least 1")
    rng = random.Random(seed)
    rows = []
    for name, table in _tables(rng).items():
        columns = [{"name": c.name, "kind": c.kind, "decimals": c.decimals} for c in table.columns]
        for _ in range(per_dataset):
            part = split(table, rng.getrandbits(62))
            rows.append(
                {
                    "id": f"ta-{rng.getrandbits(48):012x}",
                    "dataset": name,
                    "columns": columns,
                    "train": part.train,
                    "test": part.test,
                    "labels": part.labels,
                    "kinds": part.kinds,
                }
            )
    return rows


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a private split (`docket generate tabular_anomaly`) for `-T data=DIR`.

    Args:
        seed: The secret seed's integer (`docket.core.splits.secret_seed`).
        out: The directory to write `splits.jsonl` into.
        size: Splits per data set (default 3, the task's `-T seeds`).
    """
    rows = private_splits(seed, SPLITS_PER_DATASET if size is None else size)
    write_jsonl(out / SPLIT_FILE, rows)


def load_splits(path: Path) -> list[StoredSplit]:
    """The splits of a private split file, checked.

    Args:
        path: `DIR/splits.jsonl`.

    Returns:
        The stored splits, in file order.

    Raises:
        PrerequisiteError: A missing field, an unknown data set or mismatched lengths (one
            line naming the file and split).
    """
    out = []
    for row in read_jsonl(path, "tabular_anomaly", _FIELDS):
        where = f"tabular_anomaly: {path}: split {row['id']}"
        if row["dataset"] not in DATASETS:
            raise PrerequisiteError(f"{where}: unknown data set {row['dataset']!r}")
        if not len(row["test"]) == len(row["labels"]) == len(row["kinds"]):
            raise PrerequisiteError(f"{where}: test rows, labels and kinds differ in length")
        try:
            columns = [Column(c["name"], c["kind"], int(c["decimals"])) for c in row["columns"]]
        except (KeyError, TypeError, ValueError) as error:
            raise PrerequisiteError(f"{where}: bad columns ({error})") from None
        labels, kinds = [int(y) for y in row["labels"]], [str(k) for k in row["kinds"]]
        part = Split(list(row["train"]), list(row["test"]), labels, kinds)
        out.append(StoredSplit(str(row["id"]), str(row["dataset"]), columns, part))
    return out
