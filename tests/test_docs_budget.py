"""The shipped docs stay a product (issue #55 item 1): every benchmark README's parameters block
is generated from its tasks, the Markdown stays within its word budget, no README runs past
3 000 words, and few paragraphs read like a lab notebook (a date, or >= 12 % numeric tokens)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from docket.benchmarks.readme_parameters import main as readme_parameters

ROOT = Path(__file__).resolve().parents[1]
#: Words in all shipped Markdown (README files, docs pages, CONTRIBUTING).
WORD_BUDGET = 45_000
#: Words in any one README.
README_BUDGET = 3_000
#: Share of paragraphs that are notebook-like.
NOTEBOOK_BUDGET = 0.15
MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
DATE = re.compile(
    rf"\b(20\d\d-\d\d-\d\d|({MONTHS})[a-z]* \d{{1,2}},? 20\d\d|\d{{1,2}} ({MONTHS})[a-z]* 20\d\d)\b"
)


def shipped_markdown() -> list[Path]:
    """The Markdown files git tracks, tests' fixtures left out."""
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if not name.startswith("tests/")]


def notebook_like(paragraph: str) -> bool:
    """A paragraph with a date in it, or with at least 12 % of its tokens holding a digit."""
    tokens = paragraph.split()
    digits = sum(1 for token in tokens if any(c.isdigit() for c in token))
    return bool(DATE.search(paragraph)) or digits / len(tokens) >= 0.12


def test_notebook_rule_on_known_paragraphs() -> None:
    assert notebook_like("Run on 2026-12-01 at load 16.")
    assert notebook_like("one 2 three four five six seven eight")  # 1 in 8 tokens: 12.5 %
    assert not notebook_like("one 2 three four five six seven eight nine")  # 1 in 9: 11.1 %


def test_every_benchmark_readme_holds_its_generated_parameters() -> None:
    assert readme_parameters(["--check"]) == 0


def test_the_docs_stay_within_their_word_and_notebook_budgets() -> None:
    files = shipped_markdown()
    assert files
    words = {path.relative_to(ROOT).as_posix(): len(path.read_text().split()) for path in files}
    assert sum(words.values()) <= WORD_BUDGET, sorted(words.items(), key=lambda kv: -kv[1])[:5]
    assert {name: n for name, n in words.items() if n > README_BUDGET} == {}
    paragraphs = [p for path in files for p in re.split(r"\n\s*\n", path.read_text()) if p.split()]
    share = sum(map(notebook_like, paragraphs)) / len(paragraphs)
    assert share <= NOTEBOOK_BUDGET, share
