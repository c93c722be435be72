"""The tables of the variant comparison (`methods/rl/scripts/compare.py`: results.md, results.json).

From the finished runs of every variant under one folder: mean ± sample std over seeds of the
final held-out reward (greedy and sampled), the training reward of the last 10 updates,
generation cost (rollouts, tokens), the held-out sampled reward at equal generation (the last
evaluation before the task's smallest total of generated rollouts: replay's claim is equal
reward for less generation) and the held-out sampled reward curve.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from .metrics import read_metrics

#: (row name, task, variant, extra --set items)
RUNS: list[tuple[str, str, str, list[str]]] = [
    ("grpo", "arith", "grpo", []),
    ("replay", "arith", "replay", []),
    ("replay (uniform)", "arith", "replay", ["replay_positive_weight=1.0"]),
    ("nsr", "arith", "nsr", []),
    ("stratified", "arith", "stratified", []),
    ("echo (TTRL pseudo-labels)", "arith", "echo", []),
    ("echo (verifier reward)", "arith", "echo", ["echo_pseudo_labels=false"]),
    ("grpo", "constraints", "grpo", []),
    ("replay", "constraints", "replay", []),
    ("replay (uniform)", "constraints", "replay", ["replay_positive_weight=1.0"]),
    ("hir", "constraints", "hir", []),
]


def folder(out: Path, name: str, task: str, seed: int) -> Path:
    """The run folder of one comparison row and seed.

    Args:
        out: The comparison's output folder.
        name: The row name (first column of `RUNS`).
        task: The task family of the row.
        seed: The run's seed.

    Returns:
        `out / "<task>-<variant>[-gold|-uniform]-seed<seed>"`.
    """
    tag = "-gold" if "verifier" in name else "-uniform" if "uniform" in name else ""
    slug = name.split(" ")[0] + tag
    return out / f"{task}-{slug}-seed{seed}"


def _spread(values: list[float], digits: int = 3, signed: bool = False) -> str:
    """mean ± sample std over seeds (the bare value for one seed)."""
    if not values:
        return "–"
    sign = "+" if signed else ""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:{sign}.{digits}f}"
    return f"{mean:{sign}.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def at_budget(run: Path, budget: float) -> tuple[float, int] | None:
    """(sampled held-out reward, step) of the last evaluation with at most `budget` rollouts."""
    found = None
    for record in read_metrics(run / "metrics.jsonl"):
        if "eval_sampled" in record and record["gen_rollouts"] <= budget:
            found = (float(record["eval_sampled"]), int(record["step"]))
    return found


def _summaries(out: Path, name: str, task: str, seeds: list[int]) -> list[tuple[Path, Any]]:
    runs = [folder(out, name, task, seed) for seed in seeds]
    return [
        (r, json.loads((r / "summary.json").read_text()))
        for r in runs
        if (r / "summary.json").is_file()
    ]


def table(out: Path, seeds: list[int]) -> tuple[str, list[dict[str, Any]]]:
    """The Markdown tables and their rows from the finished runs under `out`."""
    rows: list[dict[str, Any]] = []
    lines = [
        "| task | variant | seeds | held-out sampled: start → end | gain (paired)"
        " | held-out greedy: start → end"
        " | train reward (last 10) | rollouts generated | tokens generated"
        " | held-out sampled at equal generation |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    budgets: dict[str, float] = {}
    for name, task, _, _ in RUNS:
        for _, summary in _summaries(out, name, task, seeds):
            budgets[task] = min(budgets.get(task, float("inf")), float(summary["gen_rollouts"]))
    curves: list[str] = []
    for name, task, _, _ in RUNS:
        found = _summaries(out, name, task, seeds)
        if not found:
            continue
        summaries = [summary for _, summary in found]

        def pick(key: str, when: str, rows: list[dict[str, Any]] = summaries) -> list[float]:
            return [float(s[when][key]) for s in rows]

        equal = [at_budget(run, budgets[task]) for run, _ in found]
        row: dict[str, Any] = {
            "task": task,
            "variant": name,
            "seeds": len(summaries),
            "sampled_start": pick("eval_sampled", "initial_eval"),
            "sampled_end": pick("eval_sampled", "final_eval"),
            "sampled_gain": [
                e - b
                for b, e in zip(
                    pick("eval_sampled", "initial_eval"),
                    pick("eval_sampled", "final_eval"),
                    strict=True,
                )
            ],
            "greedy_start": pick("eval_greedy", "initial_eval"),
            "greedy_end": pick("eval_greedy", "final_eval"),
            "train_reward": [float(s["final_rewards"]) for s in summaries],
            "rollouts": [float(s["gen_rollouts"]) for s in summaries],
            "tokens": [float(s["gen_tokens"]) for s in summaries],
            "equal_budget": budgets[task],
            "sampled_at_budget": [e[0] for e in equal if e is not None],
            "step_at_budget": [e[1] for e in equal if e is not None],
            "curve": {
                step: [float(s["evals"][step]["eval_sampled"]) for s in summaries]
                for step in summaries[0]["evals"]
                if all(step in s["evals"] for s in summaries)
            },
        }
        rows.append(row)
        steps = sorted(set(row["step_at_budget"]))
        lines.append(
            f"| {task} | {name} | {len(summaries)} | {_spread(row['sampled_start'])} → "
            f"{_spread(row['sampled_end'])} | {_spread(row['sampled_gain'], signed=True)} | "
            f"{_spread(row['greedy_start'])} → "
            f"{_spread(row['greedy_end'])} | {_spread(row['train_reward'])} | "
            f"{statistics.fmean(row['rollouts']):,.0f} | {statistics.fmean(row['tokens']):,.0f} | "
            f"{_spread(row['sampled_at_budget'])} (update {'/'.join(map(str, steps))}) |"
        )
        curves.append(
            f"| {task} | {name} | "
            + " | ".join(f"{statistics.fmean(v):.3f}" for v in row["curve"].values())
            + " |"
        )
    header = " | ".join(str(step) for step in rows[0]["curve"]) if rows else ""
    curve_table = [
        "",
        "Held-out sampled reward by update (mean over seeds):",
        "",
        f"| task | variant | {header} |",
        "|---|---|" + "---|" * len(rows[0]["curve"] if rows else []),
        *curves,
    ]
    return "\n".join(lines + curve_table) + "\n", rows


def _shares(counts: Counter[int]) -> dict[int, float]:
    total = sum(counts.values())
    return {key: counts[key] / total for key in sorted(counts)} if total else {}


def replay_stats(run: Path, from_step: int = 11) -> dict[str, Any]:
    """Age and reuse of the rollouts one replay run sampled, from its metrics and summary.

    Args:
        run: A finished replay run folder (`metrics.jsonl` with `sampled_ages`,
            `sampled_uses`, `batch_reward`; `summary.json` with `replay`).
        from_step: The first update counted (the buffer of N = 256 fills at update N/R = 8).

    Returns:
        `ages` and `uses` (share of the draws per age in updates and per use count at draw
        time, this draw included), `mean_age`, `fresh_share` (age 0), `lifetime` (share of
        the evicted rollouts per lifetime use count), `mean_lifetime_uses`,
        `never_drawn_share` and `batch_minus_fresh` (mean over the counted updates of the
        trained batch's reward minus the fresh rollouts' reward: with a 0/1 reward, the
        difference in the share of positives).

    Raises:
        ValueError: If the run recorded no sampled rollouts in the counted updates.
    """
    records = [
        r
        for r in read_metrics(run / "metrics.jsonl")
        if "sampled_ages" in r and r["step"] >= from_step
    ]
    if not records:
        raise ValueError(f"{run}: no replay draws recorded from update {from_step} on")
    ages: Counter[int] = Counter(int(a) for r in records for a in r["sampled_ages"])
    uses: Counter[int] = Counter(int(u) for r in records for u in r["sampled_uses"])
    replay = json.loads((run / "summary.json").read_text())["replay"]
    lifetime: Counter[int] = Counter({int(k): int(v) for k, v in replay["lifetime_uses"].items()})
    evicted = sum(lifetime.values())
    age_shares = _shares(ages)
    return {
        "ages": age_shares,
        "uses": _shares(uses),
        "mean_age": sum(a * n for a, n in ages.items()) / sum(ages.values()),
        "fresh_share": age_shares.get(0, 0.0),
        "lifetime": _shares(lifetime),
        "mean_lifetime_uses": sum(k * n for k, n in lifetime.items()) / evicted if evicted else 0.0,
        "never_drawn_share": float(replay["never_drawn_share"]),
        "batch_minus_fresh": statistics.fmean(
            float(r["batch_reward"]) - float(r["reward"]) for r in records
        ),
    }
