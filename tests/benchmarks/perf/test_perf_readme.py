"""benchmarks/perf/README.md's case table names every case of `make bench`, in its order."""

from __future__ import annotations

import re
from pathlib import Path

from docket.benchmarks.perf.cases import CASES

README = Path(__file__).resolve().parents[3] / "benchmarks" / "perf" / "README.md"


def readme_cases(text: str) -> list[str]:
    """The case names of the README's `## Cases` table, in order."""
    section = text.split("\n## Cases\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)


def test_the_case_table_lists_every_case_in_order() -> None:
    assert readme_cases(README.read_text(encoding="utf-8")) == list(CASES)


def test_a_missing_or_extra_case_is_seen() -> None:
    table = "\n## Cases\n\n| case |\n|---|\n| `a` | x |\n| `b` | y |\n\n## Results\n| `c` | z |\n"
    assert readme_cases(table) == ["a", "b"]
