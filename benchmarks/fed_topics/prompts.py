"""Prompt of docket/fed_topics (the same text the Flower clients train on: `dataset.PROMPT`,
written to the run's `task.json`)."""

from __future__ import annotations

from docket.benchmarks.fed_topics.dataset import LABELS, PROMPT

__all__ = ["LABELS", "PROMPT", "render"]


def render(text: str) -> str:
    """The user prompt for one text."""
    return PROMPT.format(text=text)
