"""`docket/context_qa`'s SHINE table, rendered from the committed `results/shine.json`.

The runs themselves are `train_shine.py` (one per hypernet seed) and the three `inspect eval`
lines of the README per run; their scores are recorded in the results file, and this script
writes the README table between `<!-- shine:start -->` and `<!-- shine:end -->`.

    python benchmarks/context_qa/scripts/shine_table.py
"""

from __future__ import annotations

import json
import statistics
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from docket.core.results_tables import replace_table

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "shine.json"
README = HERE / "README.md"
TABLE = "shine"


def _f(value: float) -> str:
    """Three decimals, halves rounded up (a score of 17/80 reads 0.213, as Inspect shows it)."""
    return str(Decimal(repr(value)).quantize(Decimal("0.001"), ROUND_HALF_UP))


def _spread(values: list[float]) -> str:
    """The mean, with the sd and each value when there is more than one."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return _f(mean)
    each = ", ".join(_f(v) for v in values)
    return f"{_f(mean)} ± {_f(statistics.stdev(values))} ({each})"


def render_table(results: dict[str, Any]) -> str:
    """The README table: one row per condition on the same checkpoint, F1 over hypernet seeds.

    Args:
        results: The parsed results file (`rows`: condition, context, model_args, f1 per seed,
            logprob and its sd over seeds or null).

    Returns:
        The Markdown table.
    """
    lines = [
        "| condition (same checkpoint) | `-T context=` | model args | F1 (= exact) | "
        "answer log-prob |",
        "|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        logprob = f"{row['logprob']:.3f}".replace("-", "−")
        if row["logprob_sd"] is not None:
            logprob += f" ± {row['logprob_sd']:.3f}"
        args = f"`{row['model_args']}`" if row["model_args"] else "—"
        lines.append(
            f"| {row['condition']} | `{row['context']}` | {args} | {_spread(row['f1'])} | "
            f"{logprob} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    replace_table(README, TABLE, render_table(json.loads(RESULTS.read_text(encoding="utf-8"))))
