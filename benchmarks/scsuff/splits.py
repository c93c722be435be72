"""Private feature-rule test splits: `docket generate scsuff --seed SECRET --out DIR`, then
`-T data=DIR` on `docket/scsuff` and `docket/scsuff_hints`.

The generator draws the items from the integer `docket generate` derives from the secret (the
secret itself never reaches this module and is never written), every item once and none of the
shipped default split's (`dataset.item_key`). Item ids are opaque: a hash of that integer and
the item's position, so no id in a log can drive the generator. The shipped default split (seed
42) keeps its ids; its content hash is recorded the same way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.scsuff.dataset import (
    FEATURE_RULE_WORLD,
    Item,
    feature_rule_items,
    item_key,
)
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import write_jsonl
from docket.core.splits import read_manifest, rows_digest, split_metadata

SPLIT_FILE = "feature_rule.jsonl"
DEFAULT_SIZE = 100
#: Seed of the shipped default split (the tasks' `-T seed` default), whose items a private
#: split never holds.
SHIPPED_SEED = 42


def opaque_id(seed: int, index: int) -> str:
    """`rule-` and 12 hex digits of SHA-256 over the seed and the position."""
    return "rule-" + hashlib.sha256(f"scsuff:{seed}:{index}".encode()).hexdigest()[:12]


def item_row(item: Item) -> dict[str, Any]:
    """An item as a JSON row (every field, so `item_from_row` rebuilds it exactly)."""
    row = asdict(item)
    row["options"] = list(item.options)
    row["extra"] = dict(item.extra or {})
    return row


def item_from_row(row: dict[str, Any]) -> Item:
    """The item of a row written by `item_row`."""
    return Item(
        id=str(row["id"]),
        question=str(row["question"]),
        options=tuple(str(o) for o in row["options"]),
        answer=int(row["answer"]),
        format=str(row["format"]),
        preamble=str(row.get("preamble", "")),
        extra=dict(row.get("extra") or {}),
    )


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a fresh feature-rule split into `out` (the `generate:` entry of listing.yaml).

    Args:
        seed: The integer `docket generate` derives from the secret seed.
        out: The (new, empty) directory to write `feature_rule.jsonl` into.
        size: Number of items (default 100, the shipped size; at most 1 500).

    Raises:
        ValueError: `size` is below 1 or above the items left apart from the shipped ones.
    """
    count = DEFAULT_SIZE if size is None else size
    if count < 1:
        raise ValueError(f"scsuff: --size {count} must be at least 1")
    if count > FEATURE_RULE_WORLD - DEFAULT_SIZE:
        raise ValueError(
            f"scsuff: --size {count}: the feature-rule world has only "
            f"{FEATURE_RULE_WORLD - DEFAULT_SIZE} items apart from the shipped ones"
        )
    shipped = [item_key(item) for item in feature_rule_items(DEFAULT_SIZE, SHIPPED_SEED)]
    items = feature_rule_items(count, seed, shipped)
    rows = [item_row(item) | {"id": opaque_id(seed, i)} for i, item in enumerate(items)]
    write_jsonl(out / SPLIT_FILE, rows)


def read_split(task: str, data: str) -> tuple[list[Item], dict[str, Any]]:
    """The items of a generated split and the task metadata naming it.

    Args:
        task: The task's name, for the one-line error.
        data: The directory `docket generate scsuff` wrote.

    Returns:
        (items, `split_metadata(...)` of the split).

    Raises:
        PrerequisiteError: No or stale manifest, a split of another benchmark, a bad row.
    """
    root = Path(data)
    try:
        manifest = read_manifest(root)
    except ValueError as ex:
        raise PrerequisiteError(f"{task}: -T data={data}: {ex}") from None
    if manifest.get("benchmark") != "scsuff":
        raise PrerequisiteError(
            f"{task}: -T data={data} is a {manifest.get('benchmark')!r} split, not scsuff"
        )
    try:
        lines = (root / SPLIT_FILE).read_text(encoding="utf-8").splitlines()
        items = [item_from_row(json.loads(line)) for line in lines if line.strip()]
    except (OSError, ValueError, KeyError, TypeError) as ex:
        raise PrerequisiteError(f"{task}: -T data={data}: unreadable split ({ex})") from None
    return items, split_metadata(str(manifest["sha256"]), generated=True, name=root.name)


def shipped_metadata(items: list[Item], name: str) -> dict[str, Any]:
    """`split_metadata` of a shipped (or argument-built) split: the hash of its item rows."""
    return split_metadata(rows_digest(item_row(i) for i in items), generated=False, name=name)
