"""The run configurations of docket's RL loop: one class per variant (TRL's pattern).

`GRPOConfig` holds what every variant shares (budget, optimiser, clipping, evaluation); each
other variant subclasses it with its own knobs only. `config_for(variant, **values)` builds the
right class from a variant name (the runner's `--variant`), with one clear error for an unknown
variant or a setting that belongs to another variant. Defaults: the README's toy runs. These are
docket's own loop's configurations, not TRL's `GRPOConfig` (see `engines/trl_grpo.py` for that).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from .echo.branching import TreeConfig


def toy_tree() -> TreeConfig:
    """ECHO tree thresholds for the toy tasks' short answers and small vocabulary (ours):
    full-vocabulary entropy, branching from the first token, thresholds in the range the
    warm-started tiny model's signals take (the released values cannot fire here)."""
    return TreeConfig(
        min_depth=0,
        entropy_high=1.3,
        entropy_low=0.3,
        entropy_window=2,
        group_window=2,
        tail_window=3,
        tail_decline_steps=2,
        tail_threshold=2.5,
        delta_rise_steps=2,
        delta_upper=1.0,
        branch_threshold=3.0,
        entropy_delta_threshold=0.0,
        max_branches=3,
        prune_threshold=2.4,
        logprob_top_k=None,
        confidence_top_k=5,
    )


@dataclass
class GRPOConfig:
    """GRPO, and what every variant shares: B = prompts_per_step × group_size fresh rollouts per
    update, `epochs` passes of `minibatches` minibatches, clipped surrogate (ε 0.2 / 0.28)."""

    variant: ClassVar[str] = "grpo"

    task: str = "arith"
    seed: int = 0
    steps: int = 200
    prompts_per_step: int = 8
    group_size: int = 8
    epochs: int = 2
    minibatches: int = 2
    lr: float = 1e-4
    temperature: float = 1.0
    max_grad_norm: float = 1.0
    eps_low: float = 0.2
    eps_high: float = 0.28
    aggregation: str = "token_mean"
    warmup_steps: int = 10
    eval_every: int = 25
    eval_size: int = 200
    eval_samples: int = 4

    def validate(self) -> None:
        """One clear ValueError for an impossible combination."""
        for name in ("steps", "prompts_per_step", "group_size", "epochs", "minibatches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        """The variant's name and every field (the runner's `config.json`)."""
        return {"variant": self.variant, **asdict(self)}


@dataclass
class ReplayConfig(GRPOConfig):
    """Experience replay (`replay.py`): R = replay_fresh_prompts × group_size fresh rollouts
    pushed to a FIFO buffer of capacity N > B, B drawn without removal (positives up-weighted);
    clipped surrogate against the behaviour log-probabilities, or AsymRE."""

    variant: ClassVar[str] = "replay"

    replay_fresh_prompts: int = 4
    replay_capacity: int = 256  # N > B, so each update samples B of the N buffered
    replay_positive_weight: float = 2.0
    replay_loss: str = "clip"
    asymre_offset: float = 0.1

    def validate(self) -> None:
        """Replay must sample: capacity N above the batch B, fresh rollouts R within N."""
        super().validate()
        if self.replay_loss not in ("clip", "asymre"):
            raise ValueError(f"replay_loss must be clip or asymre, got {self.replay_loss!r}")
        batch = self.prompts_per_step * self.group_size
        fresh = self.replay_fresh_prompts * self.group_size
        if self.replay_capacity <= batch:
            raise ValueError(
                f"replay_capacity N = {self.replay_capacity} must exceed the batch B = "
                f"prompts_per_step x group_size = {batch} (at N <= B every update takes the "
                f"whole buffer and nothing is sampled); set replay_capacity > {batch}, "
                f"e.g. {4 * batch}"
            )
        if not 1 <= fresh <= self.replay_capacity:
            raise ValueError(
                f"replay_fresh_prompts x group_size = {fresh} fresh rollouts per update must be "
                f"between 1 and replay_capacity = {self.replay_capacity}"
            )


@dataclass
class NSRConfig(GRPOConfig):
    """NSR rescue (`nsr.py`): scaled upper side, plain lower side."""

    variant: ClassVar[str] = "nsr"

    nsr_variant_high: str = "scaled"
    nsr_variant_low: str = "plain"
    nsr_u_min_high: float = 0.0
    nsr_u_min_low: float = 0.0


@dataclass
class StratifiedConfig(GRPOConfig):
    """Stratified GRPO (`advantages.py`): the SAN blend over `family.stratum` strata."""

    variant: ClassVar[str] = "stratified"

    san_alpha: float = 1.0


@dataclass
class EchoConfig(GRPOConfig):
    """ECHO (`echo/`): tree rollouts, majority-vote pseudo-labels (or the verifier's reward),
    hybrid-shaped token advantages, confidence-adaptive clipping."""

    variant: ClassVar[str] = "echo"

    echo_tree: bool = True
    echo_pseudo_labels: bool = True
    echo_mult: float = 0.1
    echo_add: float = 0.0
    echo_adaptive_clip: bool = True
    echo_eps_min: float = 0.05
    echo_eps_max: float = 0.2
    echo_kappa: float = 4.0
    echo_conf_k: int = 5
    echo_conf_norm: str = "mass_topk"
    echo_tail_window: int = 16
    tree: TreeConfig = field(default_factory=toy_tree)


@dataclass
class HiRConfig(GRPOConfig):
    """HiR (`hir.py`): up to `hir_k` hindsight rewrites per update (needs `task="constraints"`)."""

    variant: ClassVar[str] = "hir"

    task: str = "constraints"
    hir_k: int = 8
    hir_lam0: float = 2.0
    hir_growth: float = 1.05
    hir_placement: str = "group"

    def validate(self) -> None:
        """HiR rewrites constraints: only the constraints family."""
        super().validate()
        if self.task != "constraints":
            raise ValueError("variant hir needs --task constraints (it rewrites constraints)")


CONFIGS: dict[str, type[GRPOConfig]] = {
    c.variant: c
    for c in (GRPOConfig, ReplayConfig, NSRConfig, StratifiedConfig, EchoConfig, HiRConfig)
}
VARIANTS: tuple[str, ...] = tuple(CONFIGS)


def config_class(variant: str) -> type[GRPOConfig]:
    """The configuration class of a variant name.

    Args:
        variant: One of `VARIANTS`.

    Returns:
        Its class.

    Raises:
        ValueError: An unknown variant (the accepted names listed).
    """
    if variant not in CONFIGS:
        raise ValueError(f"unknown variant {variant!r} (accepted: {', '.join(VARIANTS)})")
    return CONFIGS[variant]


def check_settings(variant: str, names: list[str]) -> None:
    """Refuse settings the variant's class does not have, naming the variant that has each.

    Args:
        variant: One of `VARIANTS`.
        names: Setting names.

    Raises:
        ValueError: An unknown variant, or a name that is not a field of its class.
    """
    cls = config_class(variant)
    known = {f.name for f in fields(cls)}
    for name in names:
        if name in known:
            continue
        owners = [v for v, c in CONFIGS.items() if name in {f.name for f in fields(c)}]
        if owners:
            raise ValueError(
                f"setting {name} belongs to variant {' / '.join(owners)}, not {variant}"
            )
        raise ValueError(
            f"unknown setting {name!r} for variant {variant}; accepted: {', '.join(sorted(known))}"
        )


def config_for(variant: str, **values: Any) -> GRPOConfig:
    """The validated configuration of a variant name and its settings.

    Args:
        variant: One of `VARIANTS`.
        **values: Fields of that variant's class.

    Returns:
        An instance of the variant's class.

    Raises:
        ValueError: An unknown variant, a setting of another variant or none, or a combination
            `validate` refuses.
    """
    check_settings(variant, list(values))
    cfg = CONFIGS[variant](**values)
    cfg.validate()
    return cfg
