"""`python methods/distill/scripts/export.py LOG OUT.jsonl [--all] [--hf DIR]`

Exports the VAL-validated teacher traces of a `docket/docval_teacher` log: one JSON line per
sample that `val_scorer` accepted (every scored sample with `--all`, with its decision), and
with `--hf` the same rows as a `datasets` dataset (`docket.methods.distill.export`).
"""

from __future__ import annotations

import argparse

from docket.methods.distill.export import to_hf_dataset, trace_rows, write_jsonl


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point.

    Args:
        argv: The command line without the program name (default: `sys.argv[1:]`).
    """
    parser = argparse.ArgumentParser(description="Export VAL-validated DocVAL teacher traces.")
    parser.add_argument("log", help="an Inspect log of docket/docval_teacher")
    parser.add_argument("out", help="output JSONL path")
    parser.add_argument("--all", action="store_true", help="keep rejected traces too")
    parser.add_argument("--hf", help="also save a datasets dataset to this folder")
    args = parser.parse_args(argv)
    rows = trace_rows(args.log, accepted_only=not args.all)
    write_jsonl(rows, args.out)
    if args.hf:
        to_hf_dataset(rows, args.hf)
    print(f"wrote {len(rows)} traces to {args.out}")


if __name__ == "__main__":
    main()
