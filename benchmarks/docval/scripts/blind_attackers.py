"""Measure DocVAL's blind attackers and write the results file and the README table.

`python benchmarks/docval/scripts/blind_attackers.py [--out FILE] [--no-readme]`: trains every
attacker of `chance.ATTACKERS` on a generated train-wording split, scores it on the shipped split
and on a fresh split, writes `benchmarks/docval/results/blind_attackers.json` and regenerates the
README's attacker table from it (`chance.render`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from docket.benchmarks.docval.chance import RESULTS, TABLE, measure, render
from docket.core.results_tables import write_results


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--train-docs", type=int, default=200)
    parser.add_argument("--no-readme", action="store_true")
    args = parser.parse_args(argv)
    results = measure(train_docs=args.train_docs)
    if args.no_readme:
        write_results(args.out, results)
    else:
        TABLE.publish(results, render(results), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
