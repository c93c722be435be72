"""Tasks whose score does not depend on the model under test declare it (reports: method tables)."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task

from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag, erm_retrieval
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly


def _metadata(task: Task) -> dict[str, Any]:
    assert task.metadata is not None
    return task.metadata


def test_model_free_tasks_declare_it() -> None:
    assert _metadata(erm_retrieval())["model_free"] is True
    anomaly = _metadata(tabular_anomaly())
    assert anomaly["model_free"] is True and anomaly["method"] == anomaly["detector"]


def test_tasks_that_call_the_model_do_not() -> None:
    assert _metadata(erm_retrieval(self_expander=True))["model_free"] is False
    assert "model_free" not in _metadata(erm_rag())
