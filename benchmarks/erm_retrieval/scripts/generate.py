"""Write the ERM corpus: `python benchmarks/erm_retrieval/scripts/generate.py OUT`.

The command line of `docket.benchmarks.erm_retrieval.generate` (which documents the corpus);
`benchmarks/erm_retrieval/data` is the shipped output with the default arguments.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from docket.benchmarks.erm_retrieval.generate import generate


def main(argv: list[str] | None = None) -> int:
    """CLI: write the data set."""
    parser = argparse.ArgumentParser(prog="python benchmarks/erm_retrieval/scripts/generate.py")
    parser.add_argument("out", type=Path)
    parser.add_argument("--docs", type=int, default=240)
    parser.add_argument("--mismatch", type=float, default=0.8)
    parser.add_argument("--coverage", type=float, default=0.85)
    parser.add_argument("--noise", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    sizes = generate(args.out, args.docs, 0.6, args.mismatch, args.coverage, args.noise, args.seed)
    print(f"wrote {args.out}: queries per split {sizes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
