"""docket/rl_constraints: the first-letter fill attacker, exact on known instructions and on
the shipped split (the chance row of the README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.rl_constraints.attacks import first_letter_fill
from docket.benchmarks.rl_constraints.rl_constraints import CONSTRAINTS
from docket.core.jsonl import read_jsonl
from docket.methods.rl.tasks.constraints import judge


def test_first_letter_fill_on_known_instructions() -> None:
    assert first_letter_fill("len=3 end=c no=f >") == "ccc"  # satisfies all three
    assert first_letter_fill("start=b end=d >") == "bbbb"  # fails end=d
    assert first_letter_fill("len=5 no=a no=b >") == "ccccc"
    assert first_letter_fill("no=e >") == "aaaa"


def test_the_chance_row_scores_exactly_on_the_shipped_split(tmp_path: Path) -> None:
    log = inspect_eval(
        "docket/rl_constraints",
        model=get_model("docket/scripted", policy="rl_constraints_first_letter"),
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    means = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert means["reward"] == pytest.approx(0.57, abs=1e-12)  # 114 of 200 instructions
    assert means["cla"] == pytest.approx(0.8241666666666666, abs=1e-12)


def test_no_word_of_one_repeated_letter_does_better() -> None:
    rows = read_jsonl(CONSTRAINTS.shipped, "rl_constraints", ("prompt", "constraints"))
    ceiling = [
        any(all(judge(row["constraints"], c * n)) for c in "abcdef" for n in (3, 4, 5))
        for row in rows
    ]
    fill = [all(judge(row["constraints"], first_letter_fill(row["prompt"]))) for row in rows]
    assert sum(ceiling) == sum(fill) == 114 and fill == ceiling
