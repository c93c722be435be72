"""`-T config=` of `docket/correct_localization`: the scoring tolerance, the prompt's ground
truth, CORRECT's cache knobs and the Hugging Face loader's options (the common options stay
task parameters)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from docket.core.task_config import TaskConfig


class CorrectConfig(TaskConfig):
    """The less common knobs of `docket/correct_localization` (`-T config=FILE.yaml`)."""

    with_gt: bool = Field(False, description="Show the correct final answer in the prompts.")
    tolerance: int = Field(1, ge=0, description="t of the step-within-±t accuracy.")
    k: int = Field(5, ge=1, description="Schemata retrieved per sample (method=correct).")
    retriever: Literal["bm25", "tfidf", "embedding"] = Field(
        "bm25", description="Schema retriever (embedding needs docket[embeddings])."
    )
    mode: Literal["strict", "transductive_leaks_labels"] = Field(
        "strict",
        description="strict: the cache is fitted on the train split and evaluated labels join "
        "it prequentially; transductive_leaks_labels: fitted on the evaluated trajectories, "
        "each sample's own schema left out (the paper's protocol, which leaks the other test "
        "labels).",
    )
    online: bool = Field(
        True,
        description="Add each sample's schema to the cache after its retrieval, replay hot "
        "schemata and evict.",
    )
    delta: float = Field(
        0.9, ge=1e-6, le=1.0, description="Merge threshold: signature cosine that merges."
    )
    theta: float = Field(
        0.01, ge=0.0, le=1e9, description="Eviction threshold on an entry's decayed hotness."
    )
    theta_hot: float = Field(
        3.0,
        ge=0.0,
        le=1e9,
        description="Hotness at which an entry is refined by replay on its source failures.",
    )
    decay: float = Field(0.995, ge=1e-6, le=1.0, description="Hotness decay per query.")
    capacity: int = Field(0, ge=0, description="Most entries kept (0: unbounded).")
    cache_path: str = Field(
        "",
        description="SQLite file of the fitted cache, reused across runs of the same mode, "
        "split and data (another protocol stops with one line); '' for a fresh one.",
    )
    fit_size: int = Field(
        0, ge=0, description="Fit the cache on the first fit_size fit trajectories (0: all)."
    )
    hf_name: str = Field(
        "", description="Configuration of a Hugging Face dataset (e.g. Hand-Crafted)."
    )
    hf_split: str = Field("", description="Split of a Hugging Face dataset (default train).")
