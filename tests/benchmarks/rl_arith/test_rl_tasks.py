"""docket/rl_arith and docket/rl_constraints: shipped data, exact reference scores, one-line
errors, the declared headline; and a checkpoint written by the RL runner scored by docket/local
exactly as the runner's own greedy evaluation scores it."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
import yaml
from inspect_ai import eval as inspect_eval

from docket.benchmarks.rl_arith.rl_arith import ARITH, rl_arith
from docket.benchmarks.rl_constraints.rl_constraints import CONSTRAINTS, rl_constraints
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import parse_lines
from docket.methods.rl.tasks import family
from docket.methods.rl.tasks.base import read_jsonl

ROOT = Path(__file__).resolve().parents[3] / "benchmarks"
SHIPPED = {"rl_arith": ARITH.shipped, "rl_constraints": CONSTRAINTS.shipped}
RUNNER = ROOT.parent / "methods" / "rl" / "scripts" / "run.py"


@pytest.mark.parametrize(
    ("benchmark", "name"), [("rl_arith", "arith"), ("rl_constraints", "constraints")]
)
def test_shipped_split_is_the_families_test_split(benchmark: str, name: str) -> None:
    rows = read_jsonl(SHIPPED[benchmark])
    generated = family(name).split("test", 200)
    assert rows == json.loads(json.dumps(generated))
    train = {p["prompt"] for p in family(name).split("train", 100, seed=0)}
    assert not train & {r["prompt"] for r in rows}  # never trained on


def _score(task: str, policy: str, log_dir: Path) -> dict[str, float]:
    log = inspect_eval(
        task, model="docket/scripted", model_args={"policy": policy}, display="none",
        log_dir=str(log_dir),
    )[0]  # fmt: skip
    assert log.status == "success" and log.results is not None
    return {s.name: s.metrics["mean"].value for s in log.results.scores}


@pytest.mark.parametrize(
    ("task", "policy", "reward", "cla"),
    [
        ("docket/rl_arith", "rl_arith_oracle", 1.0, 1.0),
        ("docket/rl_arith", "rl_arith_first_operand", 0.065, 0.065),
        ("docket/rl_arith", "refuse", 0.0, 0.0),
        ("docket/rl_constraints", "rl_constraints_oracle", 1.0, 1.0),
        ("docket/rl_constraints", "rl_constraints_constant", 0.075, 0.3391666666666667),
    ],
)
def test_reference_policies_score_exactly(
    tmp_path: Path, task: str, policy: str, reward: float, cla: float
) -> None:
    scores = _score(task, policy, tmp_path)
    assert scores["reward"] == pytest.approx(reward, abs=1e-12)
    assert scores["cla"] == pytest.approx(cla, abs=1e-12)


def test_bad_arguments_and_rows_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="is not a file"):
        rl_arith(data=str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "1+1="}\n')
    with pytest.raises(PrerequisiteError, match=r"bad.jsonl:1: missing answer"):
        rl_arith(data=str(bad))
    bad.write_text('{"id": "a", "prompt": "x >", "constraints": [{"kind": "size", "arg": "3"}]}\n')
    with pytest.raises(PrerequisiteError, match="malformed row"):
        rl_constraints(data=str(bad))
    bad.write_text("not json\n")
    with pytest.raises(PrerequisiteError, match="bad.jsonl:1: not JSON"):
        rl_arith(data=str(bad))
    with pytest.raises(PrerequisiteError, match="style"):
        rl_arith(style="chatty")


def test_headline_listing_and_instructed_style() -> None:
    for build, folder, version in ((rl_arith, "rl_arith", "2-A"),
                                   (rl_constraints, "rl_constraints", "2-B")):  # fmt: skip
        task = build()
        meta = task.metadata or {}
        assert meta["benchmark"] == folder
        assert meta["headline"]["direction"] == "higher" and meta["headline"]["score"] == "reward"
        listing = yaml.safe_load((ROOT / folder / "listing.yaml").read_text())
        assert listing["tasks"][0]["version"] == task.version == version
        assert (ROOT / folder / "README.md").is_file()
    sample = rl_arith(style="instructed").dataset[0]
    assert isinstance(sample.input, str) and sample.input.endswith("=")
    assert sample.input.startswith("Compute the result.")


def test_a_runner_checkpoint_is_scored_as_the_runner_scores_it(tmp_path: Path) -> None:
    """A tiny warm-started checkpoint, two GRPO updates through the CLI, then
    `inspect eval docket/rl_arith --model docket/local/OUT/model`: the same replies, the same
    reward per problem as the runner's greedy evaluation."""
    from docket.core.tiny_models import alphabet_tokenizer, tiny_llama
    from docket.methods.rl.policy import HFPolicy
    from docket.methods.rl.sft import WarmStart, warm_start
    from docket.methods.rl.tiny import load_checkpoint, save_checkpoint

    main = runpy.run_path(str(RUNNER))["main"]
    arith = family("arith")
    tokenizer = alphabet_tokenizer(arith.alphabet)
    policy = HFPolicy(tiny_llama(tokenizer, seed=0), tokenizer)
    warm_start(policy, arith, WarmStart(steps=60, batch_size=32))
    init = save_checkpoint(policy.model, tokenizer, tmp_path / "init")
    out = tmp_path / "run"
    settings = ["prompts_per_step=2", "group_size=4", "eval_size=12", "eval_samples=1"]
    code = main([
        "--variant", "grpo", "--init", str(init), "--steps", "2", "--out", str(out),
        "--no-progress", "--set", *settings,
    ])  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    records = [row for _, row in parse_lines((out / "metrics.jsonl").read_text().splitlines())]
    assert [r["step"] for r in records] == [1, 2] and records[-1]["gen_rollouts"] == 16
    log = inspect_eval(
        "docket/rl_arith", model=f"docket/local/{out / 'model'}", limit=12, display="none",
        task_args={"style": "bare"},
        log_dir=str(tmp_path / "logs"),
    )[0]  # fmt: skip
    assert log.status == "success" and log.samples is not None
    model, tok = load_checkpoint(out / "model")
    trained = HFPolicy(model, tok)
    problems = arith.split("test", 12)
    greedy = trained.sample(
        [trained.encode_prompt(p["prompt"]) for p in problems], 1, max_new_tokens=5, greedy=True
    )
    by_id: dict[str, Any] = {str(s.id): s for s in log.samples}
    for problem, text in zip(problems, greedy.texts, strict=True):
        sample = by_id[problem["id"]]
        assert sample.output.completion == text
        assert sample.scores is not None
        assert sample.scores["verifiable_reward"].value["reward"] == arith.reward(problem, text)
    inspect_mean = (
        sum(by_id[p["id"]].scores["verifiable_reward"].value["reward"] for p in problems) / 12
    )
    assert inspect_mean == pytest.approx(summary["final_eval"]["eval_greedy"])
