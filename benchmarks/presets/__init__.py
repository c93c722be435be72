"""Suite presets (`docket suite NAME|FILE`) and the benchmark listings they run.

`offline.yaml` runs every benchmark on docket's scripted and embedded models, `local.yaml` on
the embedded Qwen2.5-Coder-0.5B with every role bound to it, `api.yaml` on OpenAI-compatible
API models; all ship with the package. Each benchmark folder's
`listing.yaml` (inspect_evals style) gives its tasks, versions and the model roles they need.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

PRESETS = Path(__file__).parent
BENCHMARKS = PRESETS.parent


def preset_names() -> list[str]:
    """Names of the shipped presets."""
    return sorted(p.stem for p in PRESETS.glob("*.yaml"))


def preset_path(name_or_path: str) -> Path:
    """A shipped preset by name (`offline`, `api`) or any YAML file by path."""
    if name_or_path in preset_names():
        return PRESETS / f"{name_or_path}.yaml"
    return Path(name_or_path)


def listings() -> dict[str, dict[str, Any]]:
    """Every benchmark folder's listing.yaml by folder name."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(BENCHMARKS.glob("*/listing.yaml")):
        data = yaml.safe_load(path.read_text())
        if isinstance(data, dict):
            found[path.parent.name] = data
    return found


def listed_tasks() -> dict[str, dict[str, Any]]:
    """Every listed task by name, with its benchmark folder under "benchmark"."""
    return {
        str(t["name"]): {**t, "benchmark": folder}
        for folder, listing in listings().items()
        for t in listing.get("tasks") or []
    }


def benchmark_folders(objects: Iterable[object]) -> list[str]:
    """The benchmark folders that define `objects` (e.g. imported task functions), in order.

    Args:
        objects: Objects whose `__module__` may be a module of a benchmark folder
            (`docket.benchmarks.<folder>.<module>`); others are ignored.

    Returns:
        Each folder once, in the order its first object appears.
    """
    folders: dict[str, None] = {}
    for obj in objects:
        parts = str(getattr(obj, "__module__", "") or "").split(".")
        if len(parts) > 3 and parts[:2] == ["docket", "benchmarks"]:
            folders.setdefault(parts[2], None)
    return list(folders)


def listed_task_names(folders: Iterable[str]) -> list[str]:
    """The task names the listings of `folders` give, folder by folder in the listing's order.

    Args:
        folders: Benchmark folder names (a folder without a listing.yaml lists no task).

    Returns:
        Package-qualified task names (`docket/<task>`).
    """
    found = listings()
    return [str(t["name"]) for folder in folders for t in found.get(folder, {}).get("tasks") or []]
