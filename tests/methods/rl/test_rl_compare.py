"""The comparison table from finished runs: spread over seeds, the paired gain, and the reward
at equal generation (replay reaches its total with half the rollouts of on-policy GRPO)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docket.core.jsonl import write_jsonl
from docket.methods.rl.compare import RUNS, at_budget, folder, replay_stats, table


def fake_run(out: Path, name: str, seed: int, per_update: int, curve: list[float]) -> None:
    run = folder(out, name, "arith", seed)
    run.mkdir(parents=True)
    records = []
    evals = {}
    for step in range(0, 4 * (len(curve) - 1) + 1):
        if step % 4 == 0:
            evals[str(step)] = {"eval_greedy": 0.5, "eval_sampled": curve[step // 4]}
        if step:
            record = {"step": step, "reward": 0.3, "gen_rollouts": step * per_update}
            if step % 4 == 0:
                record["eval_sampled"] = curve[step // 4]
            records.append(record)
    write_jsonl(run / "metrics.jsonl", records)
    summary = {
        "initial_eval": evals["0"],
        "final_eval": evals[str(4 * (len(curve) - 1))],
        "evals": evals,
        "final_rewards": 0.3,
        "gen_rollouts": records[-1]["gen_rollouts"],
        "gen_tokens": 4 * records[-1]["gen_rollouts"],
    }
    (run / "summary.json").write_text(json.dumps(summary))


def test_table_spread_gain_and_equal_generation(tmp_path: Path) -> None:
    fake_run(tmp_path, "grpo", 0, 64, [0.2, 0.3, 0.4])
    fake_run(tmp_path, "grpo", 1, 64, [0.4, 0.5, 0.6])
    fake_run(tmp_path, "replay", 0, 32, [0.2, 0.25, 0.3])
    fake_run(tmp_path, "replay", 1, 32, [0.4, 0.45, 0.6])
    assert at_budget(folder(tmp_path, "grpo", "arith", 0), 256) == (0.3, 4)
    markdown, rows = table(tmp_path, [0, 1])
    grpo, replay = rows
    assert grpo["sampled_gain"] == pytest.approx([0.2, 0.2])
    assert grpo["equal_budget"] == replay["equal_budget"] == 256  # replay's total: 8 × 32
    assert grpo["sampled_at_budget"] == [0.3, 0.5] and grpo["step_at_budget"] == [4, 4]
    assert replay["sampled_at_budget"] == [0.3, 0.6] and replay["step_at_budget"] == [8, 8]
    assert "| arith | grpo | 2 | 0.300 ± 0.141 → 0.500 ± 0.141 | +0.200 ± 0.000 |" in markdown
    assert "| 512 | 2,048 | 0.400 ± 0.141 (update 4) |" in markdown
    assert "| arith | replay | 0.300 | 0.350 | 0.450 |" in markdown


def test_each_row_has_its_own_run_folder(tmp_path: Path) -> None:
    """Weighted and uniform replay (and both ECHO rows) must not share a run folder."""
    folders = {folder(tmp_path, name, task, 0) for name, task, _, _ in RUNS}
    assert len(folders) == len(RUNS)
    assert folder(tmp_path, "replay (uniform)", "arith", 1).name == "arith-replay-uniform-seed1"


def test_replay_stats_counts_only_updates_after_the_buffer_fills(tmp_path: Path) -> None:
    """Ages, uses, lifetime shares and the positives gap on a run with a known answer."""
    run = tmp_path / "constraints-replay-seed0"
    run.mkdir()
    early = {"step": 3, "reward": 0.0, "batch_reward": 1.0, "sampled_ages": [9, 9]}
    early["sampled_uses"] = [9, 9]
    records = [
        early,
        {"step": 11, "reward": 0.25, "batch_reward": 0.5, "sampled_ages": [0, 1, 1, 2]},
        {"step": 12, "reward": 0.5, "batch_reward": 0.5, "sampled_ages": [0, 3, 3, 3]},
    ]
    records[1]["sampled_uses"] = [1, 1, 2, 3]
    records[2]["sampled_uses"] = [1, 2, 2, 4]
    write_jsonl(run / "metrics.jsonl", records)
    lifetime = {"0": 1, "2": 2, "3": 1}
    replay = {"lifetime_uses": lifetime, "never_drawn_share": 0.25}
    (run / "summary.json").write_text(json.dumps({"replay": replay}))
    stats = replay_stats(run)
    assert stats["ages"] == {0: 0.25, 1: 0.25, 2: 0.125, 3: 0.375}
    assert stats["mean_age"] == pytest.approx(13 / 8) and stats["fresh_share"] == 0.25
    assert stats["uses"] == {1: 0.375, 2: 0.375, 3: 0.125, 4: 0.125}
    assert stats["lifetime"] == {0: 0.25, 2: 0.5, 3: 0.25}
    assert stats["mean_lifetime_uses"] == pytest.approx(7 / 4)
    assert stats["never_drawn_share"] == 0.25
    assert stats["batch_minus_fresh"] == pytest.approx(0.125)  # (0.25 + 0) / 2; step 3 left out
    with pytest.raises(ValueError, match="no replay draws recorded from update 20"):
        replay_stats(run, from_step=20)
