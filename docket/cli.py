"""The `docket` command: what docket registers, leaderboard reports and regression gates."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from rich.console import Console
from rich.table import Table

import docket


def _list(console: Console) -> int:
    registry = importlib.import_module("docket._registry")
    from docket.agents.scripted.policy import load_policies

    table = Table(title="docket registers")
    table.add_column("kind")
    table.add_column("name")
    for kind, names in registry.REGISTERED.items():
        for name in names:
            table.add_row(kind, name)
    for spec in load_policies().values():
        args = ", ".join(spec.args) or "-"
        table.add_row("scripted policy", f"{spec.name} ({args}): {spec.doc}")
    console.print(table)
    return 0


def _report(console: Console, log_dir: str, out: str, bundle: bool) -> int:
    from docket.reports.leaderboard import build_report

    try:
        files = build_report(log_dir, out, bundle=bundle)
    except (FileNotFoundError, RuntimeError) as ex:
        console.print(f"[red]error:[/red] {ex}", soft_wrap=True)
        return 2
    for error in files.errors:
        console.print(f"[red]error:[/red] {error}", soft_wrap=True)
    console.print(f"Markdown: {files.markdown}\nJSON: {files.json}")
    if files.bundle is not None:
        console.print(f"Log viewer bundle: {files.bundle / 'index.html'}")
    console.print(f"HTML: {files.html}")
    return 1 if files.errors else 0


def _regress(
    console: Console,
    baseline: str,
    log_dir: str,
    write: bool,
    tolerance: float,
    alpha: float,
) -> int:
    from docket.reports import regress
    from docket.reports.logs import load_logs
    from docket.reports.runs import build_runs

    try:
        loaded = load_logs(log_dir)
    except FileNotFoundError as ex:
        console.print(f"[red]error:[/red] {ex}", soft_wrap=True)
        return regress.EXIT_NOT_COMPARABLE
    runs = build_runs(loaded)
    if write:
        for error in loaded.errors:
            console.print(f"[red]error:[/red] {error}", soft_wrap=True)
        if loaded.errors:
            console.print("[red]baseline not written: fix or remove the unreadable logs[/red]")
            return regress.EXIT_NOT_COMPARABLE
        if not any(run.scored for run in runs):
            console.print(f"[red]error:[/red] {log_dir}: no scored runs; baseline not written")
            return regress.EXIT_NOT_COMPARABLE
        count = regress.write_baseline(runs, baseline)
        console.print(f"Baseline with {count} entries written to {Path(baseline).resolve()}")
        return regress.EXIT_OK
    try:
        entries = regress.read_baseline(baseline)
    except regress.BaselineError as ex:
        console.print(f"[red]error:[/red] {ex}", soft_wrap=True)
        return regress.EXIT_NOT_COMPARABLE
    comparisons = regress.compare(entries, runs, tolerance=tolerance, alpha=alpha)
    regress.print_comparisons(console, comparisons, loaded.errors)
    return regress.exit_code(comparisons, loaded.errors)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docket", description=__doc__)
    parser.add_argument("--version", action="version", version=f"docket {docket.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="tasks, model providers, sandboxes and scripted policies")
    report = commands.add_parser(
        "report", help="HTML/Markdown/JSON leaderboard from Inspect logs (exit 1: unreadable logs)"
    )
    report.add_argument("log_dir", metavar="LOGDIR", help="directory of Inspect logs")
    report.add_argument("-o", "--out", required=True, help="output directory")
    report.add_argument(
        "--bundle", action="store_true", help="also bundle the logs with `inspect view bundle`"
    )
    gate = commands.add_parser(
        "regress",
        help="compare headline metrics with a baseline (exit 0 ok, 1 regression, 2 not comparable)",
    )
    gate.add_argument("--baseline", required=True, metavar="FILE", help="baseline JSON")
    gate.add_argument("--logs", required=True, metavar="LOGDIR", help="directory of Inspect logs")
    gate.add_argument(
        "--write-baseline", action="store_true", help="write FILE from LOGDIR instead of comparing"
    )
    gate.add_argument(
        "--tolerance", type=float, default=0.05, help="largest absolute drop accepted (0.05)"
    )
    gate.add_argument("--alpha", type=float, default=0.05, help="one-sided significance (0.05)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `docket` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    console = Console()
    if args.command == "list":
        return _list(console)
    if args.command == "report":
        return _report(console, args.log_dir, args.out, args.bundle)
    if args.command == "regress":
        if args.tolerance < 0 or not 0 < args.alpha < 1:
            console.print("[red]error:[/red] --tolerance must be >= 0 and --alpha in (0, 1)")
            return 2
        return _regress(
            console, args.baseline, args.logs, args.write_baseline, args.tolerance, args.alpha
        )
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
