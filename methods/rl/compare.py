"""`python -m docket.methods.rl.compare --out runs/rl/compare [--seeds 0 1 2] [--steps 200]`

Runs the README's comparison: every variant with the same seed, updates and batch size (one
subprocess per run, each `python -m docket.methods.rl.run`), then writes `results.md` and
`results.json` with mean ± sample std over seeds of the final held-out reward (greedy and
sampled), the training reward of the last 10 updates, and generation cost (rollouts, tokens).
`--table-only` rebuilds the table from finished runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

#: (row name, task, variant, extra --set items)
RUNS: list[tuple[str, str, str, list[str]]] = [
    ("grpo", "arith", "grpo", []),
    ("replay", "arith", "replay", []),
    ("nsr", "arith", "nsr", []),
    ("stratified", "arith", "stratified", []),
    ("echo (TTRL pseudo-labels)", "arith", "echo", []),
    ("echo (verifier reward)", "arith", "echo", ["echo_pseudo_labels=false"]),
    ("grpo", "constraints", "grpo", []),
    ("hir", "constraints", "hir", []),
]


def folder(out: Path, name: str, task: str, seed: int) -> Path:
    slug = name.split(" ")[0] + ("-gold" if "verifier" in name else "")
    return out / f"{task}-{slug}-seed{seed}"


def run_all(out: Path, seeds: list[int], steps: int, threads: int) -> None:
    for seed in seeds:
        for name, task, variant, extra in RUNS:
            target = folder(out, name, task, seed)
            if (target / "summary.json").is_file():
                continue
            command = [
                sys.executable, "-m", "docket.methods.rl.run", "--variant", variant,
                "--task", task, "--seed", str(seed), "--steps", str(steps), "--out",
                str(target), "--sft-cache", str(out / "sft"), "--no-progress",
                "--threads", str(threads), "--set", *extra,
            ]  # fmt: skip
            print("+", " ".join(command), flush=True)
            subprocess.run(command, check=True)


def _spread(values: list[float], digits: int = 3) -> str:
    if not values:
        return "–"
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def table(out: Path, seeds: list[int]) -> tuple[str, list[dict[str, Any]]]:
    """The Markdown table and its rows from the finished runs under `out`."""
    rows: list[dict[str, Any]] = []
    lines = [
        "| task | variant | seeds | held-out sampled: start → end | held-out greedy: start → end"
        " | train reward (last 10) | rollouts generated | tokens generated |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, task, _, _ in RUNS:
        summaries = []
        for seed in seeds:
            path = folder(out, name, task, seed) / "summary.json"
            if path.is_file():
                summaries.append(json.loads(path.read_text()))
        if not summaries:
            continue

        def pick(key: str, when: str, rows: list[dict[str, Any]] = summaries) -> list[float]:
            return [float(s[when][key]) for s in rows]

        row = {
            "task": task,
            "variant": name,
            "seeds": len(summaries),
            "sampled_start": pick("eval_sampled", "initial_eval"),
            "sampled_end": pick("eval_sampled", "final_eval"),
            "greedy_start": pick("eval_greedy", "initial_eval"),
            "greedy_end": pick("eval_greedy", "final_eval"),
            "train_reward": [float(s["final_rewards"]) for s in summaries],
            "rollouts": [float(s["gen_rollouts"]) for s in summaries],
            "tokens": [float(s["gen_tokens"]) for s in summaries],
        }
        rows.append(row)
        lines.append(
            f"| {task} | {name} | {len(summaries)} | {_spread(row['sampled_start'])} → "
            f"{_spread(row['sampled_end'])} | {_spread(row['greedy_start'])} → "
            f"{_spread(row['greedy_end'])} | {_spread(row['train_reward'])} | "
            f"{statistics.fmean(row['rollouts']):,.0f} | {statistics.fmean(row['tokens']):,.0f} |"
        )
    return "\n".join(lines) + "\n", rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docket.methods.rl.compare")
    parser.add_argument("--out", type=Path, default=Path("runs/rl/compare"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.table_only:
        run_all(args.out, args.seeds, args.steps, args.threads)
    markdown, rows = table(args.out, args.seeds)
    (args.out / "results.md").write_text(markdown)
    (args.out / "results.json").write_text(json.dumps(rows, indent=2))
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
