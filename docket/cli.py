"""The `docket` command: what docket registers, and (as they land) reports and regression gates."""

from __future__ import annotations

import argparse
import importlib

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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `docket` console script."""
    parser = argparse.ArgumentParser(prog="docket", description=__doc__)
    parser.add_argument("--version", action="version", version=f"docket {docket.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="tasks, model providers, sandboxes and scripted policies")
    args = parser.parse_args(argv)
    console = Console()
    if args.command == "list":
        return _list(console)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
