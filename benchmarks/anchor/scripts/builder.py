"""Scenario drafts from CourtListener opinions: `python benchmarks/anchor/scripts/builder.py`.

The command line of `docket.benchmarks.anchor.builder` (which documents the inputs and drafts):
opinion JSON files (or `--query`) in, scenario-draft JSONL out.
"""

from __future__ import annotations

import argparse
import sys

from docket.benchmarks.anchor.builder import build_drafts, fetch_records, load_records
from docket.benchmarks.anchor.dataset import ScenarioError
from docket.core.jsonl import write_jsonl


def main(argv: list[str] | None = None) -> int:
    """Command line: opinion JSON files (or --query) in, scenario-draft JSONL out."""
    parser = argparse.ArgumentParser(prog="python benchmarks/anchor/scripts/builder.py")
    parser.add_argument("files", nargs="*", help="CourtListener opinion/search JSON files")
    parser.add_argument("--query", help="search the CourtListener API instead (needs network)")
    parser.add_argument("-o", "--output", required=True, help="JSONL file to write")
    args = parser.parse_args(argv)
    if not args.files and not args.query:
        parser.error("give opinion JSON files or --query")
    try:
        records = fetch_records(args.query) if args.query else load_records(args.files)
        drafts, skipped = build_drafts(records)
    except ScenarioError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return 2
    for line in skipped:
        print(line, file=sys.stderr)
    write_jsonl(args.output, (s.model_dump() for s in drafts), ascii_only=False)
    print(f"wrote {len(drafts)} drafts to {args.output} ({len(skipped)} skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
