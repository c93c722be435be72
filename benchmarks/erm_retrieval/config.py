"""`-T config=` of `docket/erm_retrieval` and `docket/erm_rag`: the query splits, ERM's update
knobs, doc2query's size and the seed (the common options stay task parameters)."""

from __future__ import annotations

from pydantic import Field

from docket.core.task_config import TaskConfig


class ErmConfig(TaskConfig):
    """The less common knobs of `docket/erm_retrieval` and `docket/erm_rag`
    (`-T config=FILE.yaml`)."""

    split: str = Field("test", description="qrels file of the scored queries (qrels/<split>.tsv).")
    feedback_split: str = Field(
        "feedback",
        description="qrels file of the feedback queries; when absent, a hash of the query id "
        "sends feedback_share of the split's queries to feedback.",
    )
    feedback_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Share of queries used as feedback when there is no feedback file.",
    )
    eta: float = Field(
        1.0, ge=1e-6, le=1.0, description="ERM step: share of the residual a key absorbs."
    )
    radius: float = Field(
        0.25, ge=0.0, le=1e6, description="ERM norm bound, relative to each key's norm."
    )
    threshold: float = Field(
        0.0, ge=-1e6, le=1e6, description="ERM attribution threshold on a unit's score gain."
    )
    gate_depth: int = Field(
        10, ge=1, description="ERM gate: a gold document within this depth of the ranking."
    )
    decay: float = Field(
        0.0, ge=0.0, le=1e6, description="ERM step decay per earlier update of the same key."
    )
    prune: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="ERM on BM25: drop key-update entries under this share of the key's largest.",
    )
    doc2query_n: int = Field(3, ge=1, description="Queries generated per document.")
    seed: int = Field(
        0, description="Seed of the random ranking and of the thesaurus doc2query generator."
    )
