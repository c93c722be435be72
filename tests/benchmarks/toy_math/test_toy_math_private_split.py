"""`docket generate toy_math`: a private split of chains no public split holds, run with
`-T data=DIR` and named in the task metadata; a bad row is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.toy_math.dataset import PROBLEMS_FILE, load_split, public_chains
from docket.benchmarks.toy_math.toy_math import toy_math
from docket.cli import main
from docket.core.inspect_private import PrerequisiteError
from docket.core.splits import MANIFEST, SPLIT_KEY


def test_a_private_split_is_fresh_and_named_in_the_log(tmp_path: Path) -> None:
    out = tmp_path / "private"
    assert (
        main(["generate", "toy_math", "--seed", "s3cret", "--out", str(out), "--size", "30"]) == 0
    )
    chains = load_split(out)
    assert len(chains) == len(set(chains)) == 30 and not set(chains) & public_chains()
    sha256 = json.loads((out / MANIFEST).read_text())["sha256"]
    student = get_model("docket/scripted", policy="toy_math_student", error_rate=0.0)
    [log] = inspect_eval(toy_math(data=str(out)), model=student, log_dir=str(tmp_path),
                         display="none")  # fmt: skip
    assert log.status == "success" and log.results is not None and log.samples
    assert len(log.samples) == 30 and log.results.scores[0].metrics["accuracy"].value == 1.0
    assert (log.eval.metadata or {})[SPLIT_KEY] == {
        "sha256": sha256,
        "source": "generated",
        "name": "private",
    }
    shipped = (toy_math(size=5).metadata or {})[SPLIT_KEY]
    assert shipped["source"] == "shipped" and shipped["name"] == "test-5"
    assert shipped["sha256"] != (toy_math(size=6).metadata or {})[SPLIT_KEY]["sha256"]


def test_a_bad_row_is_one_line(tmp_path: Path) -> None:
    (tmp_path / PROBLEMS_FILE).write_text('{"start": 3, "steps": [["/", 2]]}\n')
    with pytest.raises(PrerequisiteError, match=r"problems.jsonl row 1: steps must be"):
        toy_math(data=str(tmp_path))
    (tmp_path / PROBLEMS_FILE).write_text('{"start": "x", "steps": [["+", 2]]}\n')
    with pytest.raises(PrerequisiteError, match=r"problems.jsonl row 1: invalid literal"):
        toy_math(data=str(tmp_path))
