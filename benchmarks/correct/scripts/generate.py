"""Generate failed trajectories with confirmed ground truth, and the shipped fixed split.

The command line of `docket.benchmarks.correct.simulator.generate`: rebuild the shipped split
with `python benchmarks/correct/scripts/generate.py OUT.jsonl.gz -n 2400`.
"""

from __future__ import annotations

import argparse

from docket.benchmarks.correct.simulator.generate import SPLIT_SEED, generate_split
from docket.benchmarks.correct.simulator.records import write_trajectories
from docket.benchmarks.correct.simulator.tasks import TIERS


def main(argv: list[str] | None = None) -> None:
    """CLI: write a generated split to a JSONL(.gz) file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("-n", "--count", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=SPLIT_SEED)
    parser.add_argument(
        "--length", choices=sorted(TIERS), default="", help="one length tier only (default: all)"
    )
    args = parser.parse_args(argv)
    write_trajectories(generate_split(args.count, args.seed, args.length), args.out)


if __name__ == "__main__":
    main()
