"""`-T config=` of `docket/scsuff` and `docket/scsuff_hints`: the data source alternatives, the
alternative generator's decoding, the estimator's sampling and the seed (the common options
stay task parameters)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from docket.core.task_config import TaskConfig


class ScsuffConfig(TaskConfig):
    """The less common knobs of `docket/scsuff` (`-T config=FILE.yaml`)."""

    data_file: str | None = Field(
        None,
        description="JSONL file in the dataset's HF field layout (mmlu, snli, imdb, bbq; "
        "default: the shipped mini set).",
    )
    hf: bool = Field(
        False, description="Load the dataset from the Hugging Face hub (network, `datasets`)."
    )
    num_alternatives: int = Field(
        5, ge=1, description="M, alternative inputs written per item by role `generator`."
    )
    generator_temperature: float = Field(
        0.1, ge=0.0, description="Sampling temperature of the alternative generator."
    )
    generator_top_p: float = Field(
        0.95, gt=0.0, le=1.0, description="Nucleus top_p of the alternative generator."
    )
    generator_top_k: int = Field(
        50, ge=1, description="top_k of the alternative generator (ignored where unsupported)."
    )
    generator_max_tokens: int | None = Field(
        None,
        ge=1,
        description="Token limit of each alternative (default: the eval's max_tokens when "
        "set, else 2048 as in the release).",
    )
    num_samples: int = Field(10, ge=1, description="Samples per answer for the sampling estimator.")
    top_logprobs: int = Field(
        20, ge=1, description="Top logprobs requested at each position (logprob estimator)."
    )
    seed: int = Field(
        42, description="Seed of the feature_rule items, the few-shot draw and per-call seeds."
    )


class ScsuffHintsConfig(ScsuffConfig):
    """The less common knobs of `docket/scsuff_hints` (`-T config=FILE.yaml`): those of
    `docket/scsuff`, the estimator of its SCSuff part and the answers' token limit."""

    estimator: Literal["logprob", "sampling"] = Field(
        "logprob", description="Estimator of the SCSuff part: logprob or sampling."
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Token limit of every answer and judge call (default: the eval's "
        "max_tokens when set, else 2048).",
    )
