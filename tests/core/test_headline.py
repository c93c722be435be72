"""The headline declaration: Task kwargs for Inspect plus the metadata docket's reports read."""

from typing import Any

import pytest

from docket.benchmarks.smoke.smoke import smoke
from docket.core.headline import headline


def test_headline_sets_inspect_metric_and_metadata() -> None:
    args = headline("s", "accuracy", direction="lower", value="binary", sample_key="k")
    assert args["headline_metric"].scorer == "s"
    assert args["headline_metric"].metric == "accuracy"
    declared = args["metadata"]["headline"]
    assert declared["direction"] == "lower"
    assert declared["value"] == "binary"
    assert declared["sample_key"] == "k"


def test_survival_headline_needs_keys_and_horizon() -> None:
    with pytest.raises(ValueError, match="time_key"):
        headline("s", "m", direction="lower", value="survival")
    args = headline(
        "s", "m", direction="lower", value="survival", time_key="t", event_key="e", horizon=5
    )
    assert args["metadata"]["headline"]["horizon"] == 5


@pytest.mark.parametrize("bad", [{"direction": "up"}, {"value": "ordinal"}])
def test_bad_direction_or_value_is_refused(bad: dict[str, str]) -> None:
    kwargs: dict[str, Any] = {"direction": "higher", "value": "binary", **bad}
    with pytest.raises(ValueError, match="must be one of"):
        headline("s", "m", **kwargs)


def test_smoke_declares_its_headline() -> None:
    task = smoke()
    assert task.metadata is not None
    assert task.metadata["headline"]["metric"] == "accuracy"
    assert task.metadata["headline"]["direction"] == "higher"
