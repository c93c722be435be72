"""The shipped split: size, compression, reproducibility from the seed, coverage."""

from __future__ import annotations

import pytest
from docket.agents.mas.generate import SPLIT_SEED, make_trajectory
from docket.agents.mas.taxonomy import ERROR_TYPES
from docket.benchmarks.correct.dataset import SHIPPED, load_trajectories, select
from docket.benchmarks.correct.prompts import correct_prompt
from inspect_ai.model import ChatMessageUser, get_model


def test_shipped_split_is_large_small_and_covers_the_taxonomy() -> None:
    trajectories = load_trajectories()
    assert len(trajectories) >= 2000
    assert SHIPPED.stat().st_size < 5 * 1024 * 1024
    assert {t.metadata["error_type"] for t in trajectories} == set(ERROR_TYPES)
    assert {t.metadata["task_family"] for t in trajectories} == {
        "arithmetic",
        "multihop",
        "table",
        "code",
    }
    assert len(select(trajectories, "train")) + len(select(trajectories, "test")) == len(
        trajectories
    )


def test_shipped_records_are_reproduced_from_the_seed() -> None:
    shipped = load_trajectories()[:30]
    for index, trajectory in enumerate(shipped):
        again = make_trajectory(SPLIT_SEED, index, str(trajectory.metadata["split"]))
        assert again == trajectory


@pytest.mark.parametrize("with_schema", [True, False])
async def test_matcher_follows_the_retrieved_schema(with_schema: bool) -> None:
    trajectory = next(
        t for t in load_trajectories() if t.metadata["error_type"] == "hallucinated_fact"
    )
    schema = (
        "Error Signatures: WebSurfer at step 4 writes x. Key phrases: already, know, needed.\n"
        "Context Analysis: c\nDetection Heuristics: h"
    )
    prompt = correct_prompt(trajectory, [schema] if with_schema else [], with_gt=False)
    model = get_model("docket/scripted", policy="correct_matcher", memoize=False)
    reply = await model.generate([ChatMessageUser(content=prompt)])
    step = trajectory.mistake_step if with_schema else 0  # no schema: falls back to Step 0
    assert f"Agent Name: {trajectory.history[step].name}\nStep Number: {step}\n" in (
        reply.completion
    )
