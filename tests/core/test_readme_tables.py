"""Generated README blocks (`docket.core.readme`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docket.core.readme import block, chance_table, replace_block


def test_replace_block_rewrites_only_the_block(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("head\n<!-- t -->\nold\n<!-- /t -->\ntail\n", encoding="utf-8")
    replace_block(readme, "t", "new")
    assert readme.read_text(encoding="utf-8") == "head\n" + block("t", "new") + "\ntail\n"
    with pytest.raises(ValueError, match="no <!-- u -->"):
        replace_block(readme, "u", "x")


def test_chance_table_names_the_best_blind_row() -> None:
    rows = [{"name": "a", "acc": 0.1}, {"name": "b", "acc": 0.25}]
    table = chance_table(rows, "acc", {"a": "A", "b": "B"}, "| x | y |", "| oracle | 1.000 |")
    assert table.splitlines() == [
        "| x | y |",
        "|---|---|",
        "| A | 0.100 |",
        "| B | 0.250 |",
        "| **chance row** (the best of the above) | **0.250** |",
        "| oracle | 1.000 |",
    ]
