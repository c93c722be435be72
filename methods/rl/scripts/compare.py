"""`python methods/rl/scripts/compare.py --out runs/rl/compare [--seeds 0 1 2] [--steps 200]`

Runs the README's comparison: every variant with the same seed, updates and batch size (one
subprocess per run, each `python methods/rl/scripts/run.py`), then writes `results.md` and
`results.json` with mean ± sample std over seeds of the final held-out reward (greedy and
sampled), the training reward of the last 10 updates, generation cost (rollouts, tokens), the
held-out sampled reward at equal generation (the last evaluation before the task's smallest
total of generated rollouts: replay's claim is equal reward for less generation) and the
held-out sampled reward curve. `--table-only` rebuilds the tables from finished runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from docket.methods.rl.compare import RUNS, folder, table

RUNNER = Path(__file__).with_name("run.py")


def run_all(out: Path, seeds: list[int], steps: int, threads: int) -> None:
    """Train every row of `RUNS` for each seed, skipping runs that already have a summary.

    Args:
        out: The comparison's output folder (one run folder per row and seed, and `sft/`).
        seeds: The seeds to run.
        steps: RL updates per run.
        threads: torch CPU threads of each run.
    """
    for seed in seeds:
        for name, task, variant, extra in RUNS:
            target = folder(out, name, task, seed)
            if (target / "summary.json").is_file():
                continue
            command = [
                sys.executable, str(RUNNER), "--variant", variant,
                "--task", task, "--seed", str(seed), "--steps", str(steps), "--out",
                str(target), "--sft-cache", str(out / "sft"), "--no-progress",
                "--threads", str(threads), "--set", *extra,
            ]  # fmt: skip
            print("+", " ".join(command), flush=True)
            subprocess.run(command, check=True)


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (unless `--table-only`) and write its tables.

    Args:
        argv: The command line without the program name (default: `sys.argv[1:]`).

    Returns:
        The exit status: 0.
    """
    parser = argparse.ArgumentParser(prog="python methods/rl/scripts/compare.py")
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
