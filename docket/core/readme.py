"""Generated README tables: a block between `<!-- name -->` and `<!-- /name -->` markers that a
committed script rewrites from a committed results file (tests compare the two)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def block(name: str, body: str) -> str:
    """The marked block as it stands in the README."""
    return f"<!-- {name} -->\n{body}\n<!-- /{name} -->"


def replace_block(readme: Path, name: str, body: str) -> None:
    """Replace the block `name` of `readme` with `body` (both markers must be there).

    Args:
        readme: The README file.
        name: The marker name.
        body: The new text between the markers.

    Raises:
        ValueError: When a marker is missing.
    """
    text = readme.read_text(encoding="utf-8")
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    if start not in text or end not in text:
        raise ValueError(f"{readme}: no {start} ... {end} block")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(head + block(name, body) + tail, encoding="utf-8")


def chance_table(
    rows: list[dict[str, Any]], key: str, labels: dict[str, str], header: str, oracle: str
) -> str:
    """A chance-row table: each blind attacker's score, the best of them (the chance row) and
    the oracle's row.

    Args:
        rows: `{"name": ..., key: score}` per attacker.
        key: The score's field.
        labels: The row text per attacker name.
        header: The header row's two cells, `| ... | ... |`.
        oracle: The oracle's row.

    Returns:
        The markdown table.
    """
    best = max(rows, key=lambda r: float(r[key]))
    return "\n".join(
        [
            header,
            "|---|---|",
            *(f"| {labels[r['name']]} | {float(r[key]):.3f} |" for r in rows),
            f"| **chance row** (the best of the above) | **{float(best[key]):.3f}** |",
            oracle,
        ]
    )


def table_script(
    results: Path,
    readme: Path,
    name: str,
    measure: Callable[[], list[dict[str, Any]]],
    render: Callable[[list[dict[str, Any]]], str],
) -> None:
    """A table script's command line: measure (unless `--render`), write `results` as JSON,
    render the README block `name` from it."""
    parser = argparse.ArgumentParser(description=f"{readme.parent.name}: README table {name}")
    parser.add_argument("--render", action="store_true", help="only re-render the README")
    if not parser.parse_args().render:
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(measure(), indent=1) + "\n", encoding="utf-8")
    replace_block(readme, name, render(json.loads(results.read_text(encoding="utf-8"))))
