"""`-T config=` of `docket/tabular_anomaly`: DiSPaT's self-play and the language-model
detectors' training knobs (the common options stay task parameters)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from docket.core.task_config import TaskConfig


class TabularConfig(TaskConfig):
    """The less common knobs of `docket/tabular_anomaly` (`-T config=FILE.yaml`): they apply
    to the `dispat` and `anollm` detectors."""

    variant: Literal["implicit", "variational"] = Field(
        "implicit",
        description="DiSPaT self-play: implicit (SPIN-style critic) or variational (f-GAN critic).",
    )
    f: Literal["js", "kl", "reverse_kl", "chi2", "tv"] = Field(
        "js", description="DiSPaT's f-divergence."
    )
    iterations: int = Field(2, ge=1, description="DiSPaT self-play iterations.")
    sft_steps: int = Field(
        300, ge=1, description="Fine-tuning steps on normal rows (AnoLLM, and DiSPaT's start)."
    )
    play_steps: int = Field(40, ge=1, description="Policy steps per self-play iteration.")
    samples: int = Field(
        64,
        ge=1,
        description="Size of each self-play round's evaluation batch (real rows and π_t "
        "samples no step uses) and the π_t samples the variational critic is fitted on.",
    )
    lam: float = Field(0.05, description="λ of the implicit critic T = λ log(π_θ/π_t).")
    anchor: float = Field(1.0, description="Weight of the real rows' likelihood in self-play.")
    base_model: str = Field(
        "",
        description="A causal LM checkpoint folder for dispat/anollm (default: a tiny random "
        "character-level model built on the spot).",
    )
