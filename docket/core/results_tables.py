"""Results files, the README tables generated from them and the chance row tasks record.

A benchmark's measured rows (its chance row, its attackers) live in a committed JSON results
file that a script writes; its README holds the table rendered from that file between
`<!-- NAME:start -->` and `<!-- NAME:end -->`, and a test checks that the two agree. Its tasks
record the strongest blind attacker of that file in their metadata (`chance_metadata`:
`metadata["chance"] = {"value", "attacker", "source"}`), which the leaderboard draws as the
chance line.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def markers(name: str) -> tuple[str, str]:
    """The README comments that open and close the generated table `name`."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def load_results(path: Path) -> dict[str, Any]:
    """A committed results file (a JSON object).

    Raises:
        ValueError: The file does not hold a JSON object.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a results file holds one JSON object")
    return data


def write_results(path: Path, results: dict[str, Any]) -> None:
    """Write `results` as indented JSON (creating the folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def block(name: str, body: str) -> str:
    """The marked block `name` holding `body`, as it stands in a README."""
    start, end = markers(name)
    return f"{start}\n{body}\n{end}"


def table_block(text: str, name: str) -> str:
    """The README text between the markers of `name` (stripped).

    Raises:
        ValueError: The markers are missing.
    """
    start, end = markers(name)
    if start not in text or end not in text:
        raise ValueError(f"no {start} ... {end} block in the README")
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def replace_table(readme: Path, name: str, table: str) -> None:
    """Replace the generated block `name` of `readme` with `table`."""
    text = readme.read_text(encoding="utf-8")
    table_block(text, name)  # both markers are there
    start, end = markers(name)
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    readme.write_text(f"{head}{start}\n{table}\n{end}{tail}", encoding="utf-8")


@dataclass(frozen=True)
class GeneratedTable:
    """A README table generated from a committed results file.

    Args:
        results: The results file (JSON object).
        readme: The README that holds the table.
        name: The marker name of the table's block.
    """

    results: Path
    readme: Path
    name: str

    def load(self) -> dict[str, Any]:
        """The committed results."""
        return load_results(self.results)

    def held(self) -> str:
        """The table the README holds now."""
        return table_block(self.readme.read_text(encoding="utf-8"), self.name)

    def publish(self, results: dict[str, Any], table: str, path: Path | None = None) -> None:
        """Write `results` (to `path`, default the results file) and `table` into the README."""
        write_results(path or self.results, results)
        replace_table(self.readme, self.name, table)


def mean_stderr(mean: float, stderr: float | None) -> str:
    """A mean to three decimals, with ± its stderr when it has one.

    Args:
        mean: The mean.
        stderr: Its standard error, or None.

    Returns:
        `0.500` or `0.500 ± 0.050`.
    """
    return f"{mean:.3f}" if stderr is None else f"{mean:.3f} ± {stderr:.3f}"


def score_pairs_table(
    columns: tuple[str, str, str, str], rows: list[tuple[str, str, list[float], list[float]]]
) -> list[str]:
    """Markdown lines of a table whose last two columns are `a / b` score pairs (3 decimals).

    Args:
        columns: The four column headers.
        rows: (label, what it reads, two scores on one split, two scores on the other).

    Returns:
        The header, the rule and one line per row.
    """
    lines = ["| " + " | ".join(columns) + " |", "|---|---|---|---|"]
    for label, reads, first, second in rows:
        pair = [" / ".join(f"{v:.3f}" for v in scores) for scores in (first, second)]
        lines.append(f"| {label} | {reads} | {pair[0]} | {pair[1]} |")
    return lines


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


#: One blind attacker's row: (its name, its score on the task's headline).
Scored = tuple[str, float]


def attacker_scores(rows: Iterable[dict[str, Any]], key: str) -> list[Scored]:
    """(name, score) of each `{"name": ..., key: score}` row of a results file.

    Args:
        rows: The rows (a committed chance file's list of attackers).
        key: The score's field (the task's headline metric).

    Returns:
        `(row["name"], float(row[key]))` per row, in order.
    """
    return [(str(r["name"]), float(r[key])) for r in rows]


def strongest(rows: Iterable[Scored], direction: str = "higher") -> Scored:
    """The strongest blind attacker: the highest score (the lowest for a lower-is-better
    headline); the first of tied rows.

    Args:
        rows: (name, score) of every blind attacker (never the oracle's or a reference's row).
        direction: The headline's direction, "higher" or "lower".

    Returns:
        The chosen row.

    Raises:
        ValueError: No row, or an unknown direction (one line).
    """
    if direction not in ("higher", "lower"):
        raise ValueError(f"direction must be 'higher' or 'lower', got {direction!r}")
    listed = list(rows)
    if not listed:
        raise ValueError("no blind attacker row to take the chance row from")
    sign = 1.0 if direction == "higher" else -1.0
    return max(listed, key=lambda row: sign * row[1])


def chance_source(path: Path) -> str:
    """The repository path a task's chance row names: `benchmarks/<bench>/results/<file>`.

    Args:
        path: The committed results file, `.../<bench>/results/<file>` (in the repository or
            in an installed `docket/benchmarks/`).

    Returns:
        The path from the repository root.
    """
    return "/".join(("benchmarks", *path.parts[-3:]))


def chance_entry(path: Path, pick: Callable[[Any], Scored | None]) -> dict[str, Any]:
    """Task metadata `chance` (the leaderboard's dashed line and "Chance row" sentence) from a
    committed results file.

    Args:
        path: The committed results file (JSON), `benchmarks/<bench>/results/<file>`.
        pick: The file's content -> (attacker, score on the task's headline), or None where the
            file holds no row for the task's setting.

    Returns:
        `{"chance": {"value", "attacker", "source"}}`, or `{}` when the file is absent (an
        install without it draws no line) or `pick` finds no row.
    """
    if not path.is_file():
        return {}
    picked = pick(json.loads(path.read_text(encoding="utf-8")))
    if picked is None:
        return {}
    name, value = picked
    return {"chance": {"value": float(value), "attacker": name, "source": chance_source(path)}}


def chance_metadata(
    path: Path, rows: Callable[[Any], Iterable[Scored]], direction: str = "higher"
) -> dict[str, Any]:
    """Task metadata `chance`: the strongest blind attacker of a committed results file.

    Args:
        path: The committed results file (JSON), `benchmarks/<bench>/results/<file>`.
        rows: The file's content -> (name, score on the task's headline) of every blind
            attacker (`attacker_scores` for a list of `{"name", key}` rows).
        direction: The headline's direction: "higher" takes the highest score, "lower" the
            lowest.

    Returns:
        `{"chance": {"value", "attacker", "source"}}`, or `{}` when the file is absent.
    """
    return chance_entry(path, lambda content: strongest(rows(content), direction))


def table_script(
    results: Path,
    readme: Path,
    name: str,
    measure: Callable[[], Any],
    render: Callable[[Any], str],
) -> None:
    """A table script's command line: measure (unless `--render`), write `results` as JSON,
    then render the README block `name` from it.

    Args:
        results: The committed results file.
        readme: The README holding the block.
        name: The block's marker name.
        measure: Runs the measurement, returning what the results file holds.
        render: The table from the results file's contents.
    """
    parser = argparse.ArgumentParser(description=f"{readme.parent.name}: README table {name}")
    parser.add_argument("--render", action="store_true", help="only re-render the README")
    if not parser.parse_args().render:
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(measure(), indent=1) + "\n", encoding="utf-8")
    replace_table(readme, name, render(json.loads(results.read_text(encoding="utf-8"))))
