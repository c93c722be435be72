"""Suite presets (`docket suite NAME|FILE`) and the benchmark listings they run.

`offline.yaml` runs every benchmark on docket's scripted and embedded models, `local.yaml` on
the embedded Qwen2.5-Coder-0.5B with every role bound to it, `api.yaml` on OpenAI-compatible
API models; all ship with the package. Each benchmark folder's
`listing.yaml` (inspect_evals style) gives its tasks, versions and the model roles they need, and
its presence makes the folder a benchmark: `docket._registry` imports the task module of every
folder that has one (`task_functions`), so adding a benchmark touches no file outside its folder
and its tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

PRESETS = Path(__file__).parent
BENCHMARKS = PRESETS.parent
#: The order registered tasks take (so the order of `docket suite` runs and `docket list` rows):
#: these folders first, the order they had when each was registered by hand; any other folder
#: with a listing.yaml comes after them, by name. A new benchmark needs no line here.
RUN_ORDER: tuple[str, ...] = (
    "smoke",
    "anchor",
    "correct",
    "scsuff",
    "docval",
    "rl_arith",
    "rl_constraints",
    "context_qa",
    "fed_topics",
    "spatial_relations",
    "erm_retrieval",
    "tabular_anomaly",
    "toy_math",
)


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


def listed_folders() -> list[str]:
    """Every benchmark folder with a listing.yaml, in `RUN_ORDER` and then by name.

    Returns:
        Folder names under `benchmarks/`.
    """
    found = listings()
    known = [folder for folder in RUN_ORDER if folder in found]
    return known + sorted(set(found) - set(known))


def task_module(folder: str) -> str:
    """The module that defines a benchmark's tasks: `docket.benchmarks.<b>.<b>` (`<b>/<b>.py`).

    Args:
        folder: A benchmark folder name.

    Returns:
        The module's import name.
    """
    return f"docket.benchmarks.{folder}.{folder}"


def task_functions(folders: Iterable[str]) -> dict[str, Callable[..., object]]:
    """Import the task module of each of `folders` (registering its tasks and, through it, its
    reference policies) and return the task functions its listing names.

    Args:
        folders: Benchmark folder names, each with a listing.yaml.

    Returns:
        Each listed task's `@task` function by its bare name (`smoke` for `docket/smoke`), in
        folder and listing order.

    Raises:
        ImportError: A listed task that its folder's task module does not define (one line).
    """
    found = listings()
    functions: dict[str, Callable[..., object]] = {}
    for folder in folders:
        module = importlib.import_module(task_module(folder))
        for entry in found.get(folder, {}).get("tasks") or []:
            name = str(entry["name"]).removeprefix("docket/")
            function = getattr(module, name, None)
            if not callable(function):
                raise ImportError(
                    f"benchmarks/{folder}/listing.yaml lists docket/{name}, which "
                    f"benchmarks/{folder}/{folder}.py does not define"
                )
            functions[name] = function
    return functions
