"""Tasks whose score does not depend on the model under test declare it (reports: method tables)."""

from __future__ import annotations

from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag, erm_retrieval
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly


def test_model_free_tasks_declare_it() -> None:
    assert erm_retrieval().metadata["model_free"] is True
    assert tabular_anomaly().metadata["model_free"] is True
    assert tabular_anomaly().metadata["method"] == tabular_anomaly().metadata["detector"]


def test_tasks_that_call_the_model_do_not() -> None:
    assert erm_retrieval(self_expander=True).metadata["model_free"] is False
    assert "model_free" not in erm_rag().metadata
