"""Private rl_constraints splits (`docket generate rl_constraints`, `-T data=DIR`): fresh per seed,
reproducible, disjoint from everything the public family can draw, and the chance row on them
at its stated level."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.rl_constraints.attacks import first_letter_fill
from docket.benchmarks.rl_constraints.rl_constraints import CONSTRAINTS, rl_constraints
from docket.benchmarks.rl_constraints.splits import (
    PUBLIC,
    SPLIT_FILE,
    generate_split,
    in_public_family,
    private_problems,
    public_prompts,
)
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import read_jsonl
from docket.core.splits import SPLIT_KEY, files_digest, secret_seed
from docket.methods.rl.tasks.constraints import judge
from tests.benchmarks.generated import generator, manifest

#: README: the first-letter fill on private splits, 0.353 ± 0.035 over 30 seeds of 200.
PRIVATE_CHANCE = 0.353


_generate = generator("rl_constraints", 200)


def _prompts(out: Path) -> list[str]:
    return [str(r["prompt"]) for r in read_jsonl(out / SPLIT_FILE, "t", ("prompt",))]


def test_the_public_family_is_enumerated_exactly() -> None:
    enumerated = public_prompts()
    rng = random.Random(3)
    drawn = {PUBLIC.problem(rng)["prompt"] for _ in range(60_000)}
    assert len(enumerated) == 1530 and drawn == enumerated
    shipped = {str(r["prompt"]) for r in read_jsonl(CONSTRAINTS.shipped, "t", ("prompt",))}
    assert shipped <= enumerated


def test_seeds_give_fresh_reproducible_splits_outside_the_public_family(tmp_path: Path) -> None:
    first, again = _generate(tmp_path, "s1", "a"), _generate(tmp_path, "s1", "b")
    other = _generate(tmp_path, "s2", "c")
    assert files_digest(first) == files_digest(again) != files_digest(other)
    assert _prompts(first) != _prompts(other)
    public = public_prompts()
    for out in (first, other):
        prompts = _prompts(out)
        assert len(prompts) == len(set(prompts)) == 200 and not set(prompts) & public
    rows = read_jsonl(first / SPLIT_FILE, "t", ("constraints",))
    assert not any(in_public_family(r["constraints"]) for r in rows)
    assert "s1" not in (first / SPLIT_FILE).read_text() + (first / "split.json").read_text()


def test_ids_are_opaque_and_drive_no_generator() -> None:
    """Each id is 12 random hex digits; read as a seed (or its index as one), no generator call
    reproduces the instruction and witness at that place."""
    rows = private_problems(secret_seed("ids"), 20)
    for index, row in enumerate(rows):
        token = str(row["id"]).removeprefix("rc-")
        assert re.fullmatch(r"[0-9a-f]{12}", token)
        for seed in (int(token, 16), index):
            again = private_problems(seed, index + 1)[index]
            assert (again["prompt"], again["witness"]) != (row["prompt"], row["witness"])


def test_the_chance_row_holds_on_a_generated_split_the_task_loads(tmp_path: Path) -> None:
    task = rl_constraints(data=str(_generate(tmp_path, "a private seed")))
    problems = [(s.metadata or {})["problem"] for s in task.dataset]
    fills = [all(judge(p["constraints"], first_letter_fill(p["prompt"]))) for p in problems]
    assert len(problems) == 200 and abs(sum(fills) / 200 - PRIVATE_CHANCE) <= 0.1


def test_an_eval_on_a_generated_split_names_it(tmp_path: Path) -> None:
    out = _generate(tmp_path, "a small seed", size=20)
    written = manifest(out)
    log = inspect_eval(
        rl_constraints(data=str(out)),
        model=get_model("docket/scripted", policy="rl_constraints_oracle"),
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    assert {s.name: s.metrics["mean"].value for s in log.results.scores}["reward"] == 1.0
    assert log.eval.metadata is not None and log.eval.metadata[SPLIT_KEY] == {
        "sha256": written["sha256"], "source": "generated", "name": "split",
    }  # fmt: skip
    shipped = rl_constraints().metadata
    assert shipped is not None and shipped[SPLIT_KEY]["source"] == "shipped"


def test_bad_splits_are_one_line(tmp_path: Path) -> None:
    out = _generate(tmp_path, "x", size=5)
    foreign = _generate(tmp_path, "y", "foreign", size=5)
    written = manifest(foreign)
    (foreign / "split.json").write_text(json.dumps({**written, "benchmark": "rl_arith"}))
    (out / SPLIT_FILE).write_text((out / SPLIT_FILE).read_text() + "\n")
    expected = {out: "files changed since", tmp_path: "no split.json", foreign: "of 'rl_arith'"}
    for folder, reason in expected.items():
        with pytest.raises(PrerequisiteError, match=reason) as error:
            rl_constraints(data=str(folder))
        assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="--size 0 must be at least 1"):
        generate_split(1, tmp_path / "empty", 0)
