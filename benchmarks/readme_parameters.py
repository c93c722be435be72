"""Each benchmark README's parameters block, generated from its tasks' signatures and docstrings.

    python -m docket.benchmarks.readme_parameters          # rewrite every README's block
    python -m docket.benchmarks.readme_parameters --check  # exit 1 naming each drifted README

A benchmark's tasks are the ones its `listing.yaml` names, defined in its task module
`docket.benchmarks.<folder>.<folder>`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docket.benchmarks.presets import BENCHMARKS, listings
from docket.core.results_tables import replace_table, table_block
from docket.core.task_parameters import PARAMETERS_BLOCK, parameter_table


def benchmark_tasks(folder: str, listing: dict[str, Any]) -> list[tuple[str, Callable[..., Any]]]:
    """(registered name, task function) of each task the listing of `folder` names.

    Args:
        folder: The benchmark folder's name.
        listing: Its parsed `listing.yaml`.

    Returns:
        The tasks in the listing's order.
    """
    module = importlib.import_module(f"docket.benchmarks.{folder}.{folder}")
    names = [str(t["name"]) for t in listing.get("tasks") or []]
    return [(name, getattr(module, name.split("/", 1)[-1])) for name in names]


def parameters_block(folder: str, listing: dict[str, Any]) -> str:
    """The generated parameters block of `folder`'s README: one table per task."""
    return "\n\n".join(
        parameter_table(name, task) for name, task in benchmark_tasks(folder, listing)
    )


def drifted(readme: Path, expected: str) -> str | None:
    """Why `readme`'s parameters block differs from `expected`, or None when it matches."""
    try:
        held = table_block(readme.read_text(encoding="utf-8"), PARAMETERS_BLOCK)
    except (OSError, ValueError) as ex:
        return f"{readme}: {ex}"
    if held != expected.strip():
        return f"{readme}: the parameters table differs from the tasks' docstrings"
    return None


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or, with `--check`, compare) every benchmark README's parameters block.

    Args:
        argv: Command-line arguments (default `sys.argv[1:]`).

    Returns:
        0, or 1 when `--check` found a README that differs.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on drift")
    args = parser.parse_args(argv)
    problems: list[str] = []
    for folder, listing in listings().items():
        readme = BENCHMARKS / folder / "README.md"
        expected = parameters_block(folder, listing)
        if args.check:
            problem = drifted(readme, expected)
            problems += [problem] if problem else []
        else:
            replace_table(readme, PARAMETERS_BLOCK, expected)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
