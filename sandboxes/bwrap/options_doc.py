"""The README's table of `bwrap` options, generated from `BwrapConfig`'s field docstrings.

python -m docket.sandboxes.bwrap.options_doc          # rewrite sandboxes/README.md's block
python -m docket.sandboxes.bwrap.options_doc --check  # exit 1 when the block differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic.fields import FieldInfo

from docket.core.results_tables import replace_table, table_block
from docket.sandboxes.bwrap.config import BwrapConfig

#: The README that holds the table, and the name of its generated block.
README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = "bwrap-options"


def _default(field: FieldInfo) -> str:
    """A field's default as the table shows it (`unset` for None)."""
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, tuple | list | dict):
        return f"`{json.dumps(list(value) if isinstance(value, tuple) else value)}`"
    return f"`{value}`"


def options_table() -> str:
    """The Markdown table of every `BwrapConfig` option: name, default and meaning.

    Returns:
        The table, one row per field in declaration order, without a trailing newline.

    Raises:
        ValueError: A field has no docstring (every option must say what it does).
    """
    lines = ["| option | default | meaning |", "|---|---|---|"]
    for name, field in BwrapConfig.model_fields.items():
        if not field.description:
            raise ValueError(f"BwrapConfig.{name} has no docstring")
        meaning = " ".join(field.description.split()).replace("|", "\\|")
        lines.append(f"| `{name}` | {_default(field)} | {meaning} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or, with `--check`, compare) the options block of `sandboxes/README.md`.

    Args:
        argv: Command-line arguments (default `sys.argv[1:]`).

    Returns:
        0, or 1 when `--check` found a block that differs from `options_table()`.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on drift")
    args = parser.parse_args(argv)
    expected = options_table()
    if not args.check:
        replace_table(README, BLOCK, expected)
        return 0
    if table_block(README.read_text(encoding="utf-8"), BLOCK) != expected:
        print(f"{README}: the {BLOCK} table differs from BwrapConfig's docstrings", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
