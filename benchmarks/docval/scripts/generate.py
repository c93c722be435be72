"""Generate the procedural DocVAL split: `python benchmarks/docval/scripts/generate.py OUT`.

The command line of `docket.benchmarks.docval.generate` (which documents the seeds and files).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from docket.benchmarks.docval.generate import DIFFICULTY, SHIPPED_DOCS, SHIPPED_QUESTIONS, generate
from docket.benchmarks.docval.wording import FAMILIES


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--docs", type=int, default=SHIPPED_DOCS)
    parser.add_argument(
        "--questions", type=int, default=SHIPPED_QUESTIONS, help="questions per document"
    )
    parser.add_argument("--split", default="test")
    parser.add_argument(
        "--difficulty", nargs="+", default=list(DIFFICULTY), choices=list(DIFFICULTY)
    )
    parser.add_argument(
        "--family",
        default="test",
        choices=list(FAMILIES),
        help="label and question wording: test splits use 'test', training data 'train'",
    )
    args = parser.parse_args(argv)
    path = generate(
        args.out,
        args.seed,
        args.docs,
        args.questions,
        args.split,
        tuple(args.difficulty),
        args.family,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
