"""`python -m docket.benchmarks.perf [--only NAME ...] [--quick] [--out DIR]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from docket.benchmarks.perf.cases import CASES
from docket.benchmarks.perf.harness import Measurement, Skipped, table, write


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks; 0 when every target is met, 1 when one is missed, 2 on usage."""
    parser = argparse.ArgumentParser(prog="python -m docket.benchmarks.perf")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"of: {', '.join(CASES)}")
    parser.add_argument("--quick", action="store_true", help="few repeats (a harness check)")
    parser.add_argument("--out", type=Path, default=Path("build/bench"), help="results folder")
    args = parser.parse_args(argv)
    console = Console()
    if not console.is_terminal:  # CI logs: no wrapping of the table
        console = Console(width=160)
    unknown = sorted(set(args.only or ()) - set(CASES))
    if unknown:
        console.print(f"unknown benchmark(s) {', '.join(unknown)}; accepted: {', '.join(CASES)}")
        return 2
    results: list[Measurement | Skipped] = []
    for name in args.only or list(CASES):
        console.print(f"[bold]{name}[/bold] ...")
        try:
            results.append(CASES[name](args.quick))
        except Exception as error:  # one broken case must not lose the others' numbers
            results.append(Skipped(name, f"{type(error).__name__}: {error}"))
    json_path, md_path = write(results, args.out)
    console.print(table(results))
    console.print(f"results: {json_path} {md_path}")
    missed = [r.name for r in results if isinstance(r, Measurement) and not r.met]
    if missed:
        console.print(f"[red]targets missed: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
