"""docket's own RL loop: the six variants on one policy, the same budget, measured generation.

One trainer class per variant, picked by the configuration's type (`configs.py`;
`trainer_for(policy, family, cfg)`). Every variant runs `steps` updates. An update trains on
a batch of B = prompts_per_step × group_size rollouts for `epochs` passes of `minibatches`
minibatches (so ratios leave 1 and clipping matters), AdamW, gradient norm clipped. What
differs is where the batch comes from, its advantages and its loss:

- grpo (`Trainer`): B fresh rollouts; GRPO advantage; clipped surrogate (ε 0.2 / 0.28).
- replay (`ReplayTrainer`): R fresh pushed to a FIFO buffer (capacity N), B drawn without
  removal (positives up-weighted); GRPO advantage at insertion; clipped surrogate against the
  behaviour log-probabilities, or AsymRE.
- nsr (`NSRTrainer`): B fresh; GRPO; NSR rescue (scaled upper side, plain lower side).
- stratified (`StratifiedTrainer`): B fresh; SAN blend (strata: `family.stratum`); clipped
  surrogate.
- echo (`EchoTrainer`): tree rollouts, group_size per prompt; GRPO on majority-vote
  pseudo-labels (or the verifier's reward), hybrid-shaped per token; clipped surrogate with
  confidence-adaptive ε.
- hir (`HiRTrainer`): B fresh plus up to k hindsight rewrites (reward 1, in their prompt's
  group); GRPO; clipped surrogate.

Generation cost (batched calls, forward passes, rollouts, tokens) is counted by the policy;
evaluation (greedy on the shipped test split) is not counted.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, TypeVar

import torch
from torch import Tensor

from .advantages import grpo_advantages, stratified_advantages
from .batch import Rollouts, concat
from .configs import (
    EchoConfig,
    GRPOConfig,
    HiRConfig,
    NSRConfig,
    ReplayConfig,
    StratifiedConfig,
)
from .echo.shaping import echo_policy_loss, hybrid_advantages
from .echo.signals import actor_confidence, entropy_from_logits
from .echo.tree import tree_rollouts
from .echo.ttrl import majority_rewards
from .hir import hindsight_rows, select_replay
from .losses import PolicyLoss, clipped_surrogate
from .metrics import MetricsLog, RunProgress
from .nsr import nsr_policy_loss
from .policy import HFPolicy, Sampled, pad_right
from .replay import FIFOReplayBuffer, asymre_loss
from .tasks import Problem, TaskFamily
from .tasks.constraints import ConstraintsFamily, render


@dataclass
class TrainBatch:
    """Rollouts with their advantages ((B,) or (B, T)) and, for ECHO, token confidences."""

    rollouts: Rollouts
    advantages: Tensor
    confidence: Tensor | None = None
    stats: dict[str, float] = field(default_factory=dict)
    #: replay: per sampled rollout, its age (updates since generated) and its use count so far
    draws: dict[str, list[int]] = field(default_factory=dict)

    def rows(self, index: Tensor) -> TrainBatch:
        conf = None if self.confidence is None else self.confidence[index]
        return TrainBatch(self.rollouts.rows(index), self.advantages[index], conf)


def to_rollouts(
    policy: HFPolicy,
    family: TaskFamily,
    problems: list[Problem],
    prompts: list[list[int]],
    sampled: Sampled,
    group_offset: int,
) -> Rollouts:
    """Sampled responses as a batch: rewards from the verifier, one group per prompt."""
    ids, mask = pad_right(sampled.tokens, policy.pad_id)
    old = torch.zeros(ids.shape)
    for row, values in enumerate(sampled.logps):
        old[row, : len(values)] = torch.tensor(values)
    rewards = [
        family.reward(problems[i], t)
        for i, t in zip(sampled.prompt_index, sampled.texts, strict=True)
    ]
    return Rollouts(
        prompt_ids=[prompts[i] for i in sampled.prompt_index],
        completion_ids=ids,
        mask=mask,
        old_logp=old,
        rewards=torch.tensor(rewards),
        groups=torch.tensor(sampled.prompt_index) + group_offset,
        is_replay=torch.zeros(len(rewards), dtype=torch.bool),
        strata=torch.tensor([family.stratum(t) for t in sampled.texts]),
        info=[
            {"problem": problems[i], "text": t}
            for i, t in zip(sampled.prompt_index, sampled.texts, strict=True)
        ],
    )


def evaluate(
    policy: HFPolicy, family: TaskFamily, problems: list[Problem], samples: int = 0, seed: int = 0
) -> float:
    """Mean reward on `problems`: greedy (`samples=0`) or over `samples` draws per problem at
    the policy's temperature (seeded). Evaluation is not counted as training cost."""
    saved = replace(policy.cost)
    generator = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    for start in range(0, len(problems), 100):
        chunk = problems[start : start + 100]
        sampled = policy.sample(
            [policy.encode_prompt(p["prompt"]) for p in chunk],
            max(samples, 1),
            max_new_tokens=family.max_new_tokens,
            greedy=samples == 0,
            generator=generator,
        )
        total += sum(
            family.reward(chunk[i], t)
            for i, t in zip(sampled.prompt_index, sampled.texts, strict=True)
        )
        count += len(sampled.texts)
    policy.cost = saved
    return total / max(count, 1)


C = TypeVar("C", bound=GRPOConfig)


class Trainer(Generic[C]):
    """Runs GRPO (B fresh rollouts, GRPO advantages, clipped surrogate); each other variant is a
    subclass overriding `collect`, `advantages` or `loss`. `trainer_for(policy, family, cfg)`
    picks the class from the configuration's type."""

    config_class: ClassVar[type[GRPOConfig]] = GRPOConfig

    def __init__(self, policy: HFPolicy, family: TaskFamily, cfg: C) -> None:
        expected = trainer_class(cfg)
        if not isinstance(self, expected):
            raise TypeError(
                f"{type(cfg).__name__} (variant {cfg.variant}) runs with {expected.__name__}, "
                f"not {type(self).__name__}; use trainer_for(policy, family, cfg)"
            )
        cfg.validate()
        policy.temperature = cfg.temperature
        self.policy = policy
        self.family = family
        self.cfg: C = cfg
        self.rng = random.Random(cfg.seed)
        self.generator = torch.Generator().manual_seed(cfg.seed)
        self.loss_generator = torch.Generator().manual_seed(cfg.seed + 1)
        self.optimizer = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=0.0)
        warmup = max(cfg.warmup_steps * cfg.epochs * cfg.minibatches, 1)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda k: min(1.0, (k + 1) / warmup)
        )
        self.next_group = 0
        self.eval_problems = family.split("test", cfg.eval_size)

    # ---- collection -------------------------------------------------------------------------

    def _problems(self, count: int) -> tuple[list[Problem], list[list[int]]]:
        problems = [self.family.train_problem(self.rng) for _ in range(count)]
        return problems, [self.policy.encode_prompt(p["prompt"]) for p in problems]

    def _fresh(self, prompts_count: int) -> Rollouts:
        problems, prompts = self._problems(prompts_count)
        sampled = self.policy.sample(
            prompts,
            self.cfg.group_size,
            max_new_tokens=self.family.max_new_tokens,
            generator=self.generator,
        )
        batch = to_rollouts(self.policy, self.family, problems, prompts, sampled, self.next_group)
        self.next_group += prompts_count
        return batch

    @torch.no_grad()
    def _logits(self, batch: Rollouts) -> tuple[Tensor, Tensor, Tensor]:
        """Masked log π_old, the logits and the token entropy of the batch (current policy)."""
        scored = self.policy.score(
            batch.prompt_ids, batch.completion_ids, batch.mask, keep_logits=True
        )
        assert scored.logits is not None
        return scored.logp * scored.mask, scored.logits, entropy_from_logits(scored.logits)

    def collect(self, step: int) -> TrainBatch:
        """The training batch of update `step`: B fresh rollouts and their advantages."""
        batch = self._fresh(self.cfg.prompts_per_step)
        stats = {"reward": float(batch.rewards.mean())}
        return TrainBatch(batch, self.advantages(batch, stats), stats=stats)

    def advantages(self, batch: Rollouts, stats: dict[str, float]) -> Tensor:
        """GRPO advantages of a fresh batch (a variant may add to `stats`)."""
        return grpo_advantages(batch.rewards, batch.groups)

    def evaluate(self) -> dict[str, float]:
        """Greedy and sampled mean reward on the shipped test split."""
        return {
            "eval_greedy": evaluate(self.policy, self.family, self.eval_problems),
            "eval_sampled": evaluate(
                self.policy, self.family, self.eval_problems, self.cfg.eval_samples, self.cfg.seed
            ),
        }

    # ---- optimisation -----------------------------------------------------------------------

    def clip(self) -> dict[str, Any]:
        """The clipped surrogate's ε and aggregation."""
        cfg = self.cfg
        return dict(eps_low=cfg.eps_low, eps_high=cfg.eps_high, aggregation=cfg.aggregation)

    def loss(self, logp: Tensor, part: TrainBatch) -> PolicyLoss:
        """The variant's policy loss on a minibatch (GRPO: the clipped surrogate)."""
        rows = part.rollouts
        return clipped_surrogate(logp, rows.old_logp, part.advantages, rows.mask, **self.clip())

    def optimise(self, batch: TrainBatch) -> dict[str, float]:
        """`epochs` passes of `minibatches` steps over the batch; mean loss metrics."""
        cfg = self.cfg
        totals: dict[str, float] = {}
        count = 0
        self.policy.model.train()
        for _ in range(cfg.epochs):
            order = torch.randperm(len(batch.rollouts), generator=self.generator)
            for chunk in order.chunk(cfg.minibatches):
                part = batch.rows(chunk)
                scored = self.policy.score(
                    part.rollouts.prompt_ids, part.rollouts.completion_ids, part.rollouts.mask
                )
                out = self.loss(scored.logp, part)
                self.optimizer.zero_grad()
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), cfg.max_grad_norm)
                self.optimizer.step()
                self.schedule.step()
                for key, value in {"loss": float(out.loss.detach()), **out.metrics}.items():
                    totals[key] = totals.get(key, 0.0) + value
                count += 1
        self.policy.model.eval()
        return {key: value / count for key, value in totals.items()}

    def summary_extra(self) -> dict[str, Any]:
        """What the variant adds to the run summary (GRPO: nothing)."""
        return {}

    def run(
        self,
        log: MetricsLog | None = None,
        *,
        progress: bool = True,
        on_step: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Train for `steps` updates; return the summary (initial/final eval accuracy, reward
        curve ends, generation cost, wall time)."""
        cfg = self.cfg
        started = time.perf_counter()
        initial = self.evaluate()
        rewards: list[float] = []
        evals: dict[int, dict[str, float]] = {0: initial}
        label = f"{cfg.variant} on {cfg.task} (seed {cfg.seed})"
        with RunProgress(cfg.steps, label, enabled=progress) as bar:
            for step in range(cfg.steps):
                batch = self.collect(step)
                record: dict[str, Any] = {"step": step + 1, **batch.stats, **self.optimise(batch)}
                record.update(batch.draws)
                record.update(self.policy.cost.as_dict())
                rewards.append(float(batch.stats["reward"]))
                if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
                    evals[step + 1] = self.evaluate()
                    record.update(evals[step + 1])
                record["wall_s"] = round(time.perf_counter() - started, 2)
                if log is not None:
                    log.write(record)
                if on_step is not None:
                    on_step(record)
                latest = evals[max(evals)]
                bar.advance(
                    f"reward {record['reward']:.2f}  eval greedy {latest['eval_greedy']:.2f}"
                    f" sampled {latest['eval_sampled']:.2f}"
                )
        tail = rewards[-10:]
        return {
            "variant": cfg.variant,
            "task": cfg.task,
            "seed": cfg.seed,
            "steps": cfg.steps,
            "initial_eval": initial,
            "final_eval": evals[cfg.steps],
            "evals": evals,
            "first_rewards": sum(rewards[:10]) / len(rewards[:10]),
            "final_rewards": sum(tail) / len(tail),
            **self.policy.cost.as_dict(),
            "wall_s": round(time.perf_counter() - started, 2),
            **self.summary_extra(),
        }


class ReplayTrainer(Trainer[ReplayConfig]):
    """R fresh rollouts pushed to a FIFO buffer (capacity N), B drawn without removal
    (positives up-weighted); GRPO advantage at insertion; clipped surrogate against the
    behaviour log-probabilities, or AsymRE."""

    config_class = ReplayConfig

    def __init__(self, policy: HFPolicy, family: TaskFamily, cfg: ReplayConfig) -> None:
        super().__init__(policy, family, cfg)
        self.buffer: FIFOReplayBuffer[tuple[Rollouts, Tensor]] = FIFOReplayBuffer(
            cfg.replay_capacity, positive_weight=cfg.replay_positive_weight, seed=cfg.seed
        )

    def collect(self, step: int) -> TrainBatch:
        cfg = self.cfg
        fresh = self._fresh(cfg.replay_fresh_prompts)
        adv = grpo_advantages(fresh.rewards, fresh.groups)
        rows = [(fresh.rows([i]), adv[i : i + 1]) for i in range(len(fresh))]
        self.buffer.push(rows, fresh.rewards.tolist(), version=step)
        drawn = self.buffer.sample(cfg.prompts_per_step * cfg.group_size, version=step)
        batch = concat([d.item[0] for d in drawn])
        advantages = torch.cat([d.item[1] for d in drawn])
        ages = [d.age for d in drawn]
        uses = [d.uses for d in drawn]
        stats = {
            "reward": float(fresh.rewards.mean()),
            "batch_reward": float(batch.rewards.mean()),
            "buffer": float(len(self.buffer)),
            "mean_age": sum(ages) / len(drawn),
            "max_age": float(max(ages)),
            "fresh_share": sum(age == 0 for age in ages) / len(drawn),
            "mean_uses": sum(uses) / len(drawn),
            "first_use_share": sum(use == 1 for use in uses) / len(drawn),
        }
        draws = {"sampled_ages": ages, "sampled_uses": uses}
        return TrainBatch(batch, advantages, stats=stats, draws=draws)

    def loss(self, logp: Tensor, part: TrainBatch) -> PolicyLoss:
        if self.cfg.replay_loss == "asymre":
            rows = part.rollouts
            return asymre_loss(logp, rows.mask, rows.rewards, offset=self.cfg.asymre_offset)
        return super().loss(logp, part)

    def summary_extra(self) -> dict[str, Any]:
        return {"replay": replay_summary(self.buffer)}


class NSRTrainer(Trainer[NSRConfig]):
    """B fresh; GRPO; NSR rescue (scaled upper side, plain lower side)."""

    config_class = NSRConfig

    def loss(self, logp: Tensor, part: TrainBatch) -> PolicyLoss:
        cfg = self.cfg
        rows = part.rollouts
        return nsr_policy_loss(
            logp, rows.old_logp, part.advantages, rows.mask, **self.clip(),
            variant_high=cfg.nsr_variant_high, variant_low=cfg.nsr_variant_low,
            u_min_high=cfg.nsr_u_min_high, u_min_low=cfg.nsr_u_min_low,
            generator=self.loss_generator,
        )  # fmt: skip


class StratifiedTrainer(Trainer[StratifiedConfig]):
    """B fresh; SAN blend (strata: `family.stratum`); clipped surrogate."""

    config_class = StratifiedConfig

    def advantages(self, batch: Rollouts, stats: dict[str, float]) -> Tensor:
        stats["strata"] = float(len(set(batch.strata.tolist())))
        return stratified_advantages(
            batch.rewards, batch.groups, batch.strata, alpha=self.cfg.san_alpha
        )


class EchoTrainer(Trainer[EchoConfig]):
    """Tree rollouts, group_size per prompt; GRPO on majority-vote pseudo-labels (or the
    verifier's reward), hybrid-shaped per token; clipped surrogate with confidence-adaptive ε."""

    config_class = EchoConfig

    def _sample(self, prompts: list[list[int]]) -> tuple[Sampled, dict[str, float]]:
        """Tree rollouts (or plain sampling) of the prompts, with the tree's counts."""
        cfg = self.cfg
        tree_stats = {"branch_points": 0.0, "children": 0.0, "pruned": 0.0}
        if not cfg.echo_tree:
            sampled = self.policy.sample(
                prompts,
                cfg.group_size,
                max_new_tokens=self.family.max_new_tokens,
                generator=self.generator,
            )
            return sampled, tree_stats
        tokens: list[list[int]] = []
        index: list[int] = []
        results, _ = tree_rollouts(
            self.policy.next_logits,
            prompts,
            cfg.group_size,
            cfg.tree,
            max_new_tokens=self.family.max_new_tokens,
            eos_id=self.policy.eos_id,
            generator=self.generator,
        )
        self.policy.cost.calls += 1
        for i, result in enumerate(results):
            self.policy.cost.tokens += result.tokens_generated
            self.policy.cost.rollouts += len(result.completions) + result.dropped
            tree_stats["branch_points"] += result.branch_points
            tree_stats["children"] += result.children
            tree_stats["pruned"] += sum(result.pruned.values())
            tokens += [c.tokens for c in result.completions]
            index += [i] * len(result.completions)
        sampled = Sampled(index, tokens, [[0.0] * len(t) for t in tokens])
        sampled.texts = [self.policy.decode(t) for t in tokens]
        return sampled, tree_stats

    def collect(self, step: int) -> TrainBatch:
        cfg = self.cfg
        problems, prompts = self._problems(cfg.prompts_per_step)
        sampled, tree_stats = self._sample(prompts)
        batch = to_rollouts(self.policy, self.family, problems, prompts, sampled, self.next_group)
        self.next_group += len(prompts)
        true_reward = float(batch.rewards.mean())
        if cfg.echo_pseudo_labels:
            pseudo = torch.zeros(len(batch))
            for i in range(len(prompts)):
                rows = [r for r, p in enumerate(sampled.prompt_index) if p == i]
                _, marks = majority_rewards([self.family.answer(sampled.texts[r]) for r in rows])
                pseudo[rows] = torch.tensor(marks)
            batch.rewards = pseudo
        old_logp, logits, entropy = self._logits(batch)
        conf = actor_confidence(logits, cfg.echo_conf_k, cfg.echo_conf_norm)
        batch.old_logp = old_logp
        adv = grpo_advantages(batch.rewards, batch.groups)
        token_adv = hybrid_advantages(
            adv, entropy, conf, batch.mask, batch.groups, mult_coeff=cfg.echo_mult,
            add_coeff=cfg.echo_add,
        )  # fmt: skip
        stats = {"reward": true_reward, "pseudo_reward": float(batch.rewards.mean()), **tree_stats}
        return TrainBatch(batch, token_adv, confidence=conf, stats=stats)

    def loss(self, logp: Tensor, part: TrainBatch) -> PolicyLoss:
        cfg = self.cfg
        rows = part.rollouts
        assert part.confidence is not None
        return echo_policy_loss(
            logp, rows.old_logp, part.advantages, rows.mask, part.confidence,
            tail_window=cfg.echo_tail_window, eps_min=cfg.echo_eps_min,
            eps_max=cfg.echo_eps_max, kappa=cfg.echo_kappa, adaptive=cfg.echo_adaptive_clip,
            aggregation=cfg.aggregation,
        )  # fmt: skip


class HiRTrainer(Trainer[HiRConfig]):
    """B fresh plus up to k hindsight rewrites (reward 1, in their prompt's group); GRPO;
    clipped surrogate."""

    config_class = HiRConfig

    def collect(self, step: int) -> TrainBatch:
        cfg = self.cfg
        family = self.family
        assert isinstance(family, ConstraintsFamily)
        batch = self._fresh(cfg.prompts_per_step)
        cla = torch.tensor(
            [family.cla(info["problem"], str(info["text"])) for info in batch.info]  # type: ignore[arg-type]
        )
        _, _, entropy = self._logits(batch)
        mean_entropy = (entropy * batch.mask).sum(-1) / batch.mask.sum(-1).clamp(min=1)
        picked = select_replay(
            cla, mean_entropy, step, cfg.hir_k, lam0=cfg.hir_lam0, growth=cfg.hir_growth
        )
        stats = {"reward": float(batch.rewards.mean()), "hindsight": float(picked.numel())}
        if picked.numel():
            prompts = []
            for i in picked.tolist():
                problem, text = batch.info[i]["problem"], str(batch.info[i]["text"])
                marks = family.judgements(problem, text)
                kept = [c for c, ok in zip(problem["constraints"], marks, strict=True) if ok]
                prompts.append(self.policy.encode_prompt(render(kept)))
            replayed = hindsight_rows(batch, picked, prompts, placement=cfg.hir_placement)
            batch = concat([batch, replayed])
        return TrainBatch(batch, grpo_advantages(batch.rewards, batch.groups), stats=stats)


TRAINERS: tuple[type[Trainer[Any]], ...] = (
    Trainer,
    ReplayTrainer,
    NSRTrainer,
    StratifiedTrainer,
    EchoTrainer,
    HiRTrainer,
)


def trainer_class(cfg: GRPOConfig) -> type[Trainer[Any]]:
    """The trainer of a configuration: the one whose `config_class` is nearest in its type's MRO
    (so a subclass of a variant's configuration runs with that variant's trainer)."""
    by_config = {t.config_class: t for t in TRAINERS}
    for cls in type(cfg).__mro__:
        if cls in by_config:
            return by_config[cls]
    raise TypeError(f"{type(cfg).__name__} is not a run configuration (a GRPOConfig subclass)")


def trainer_for(policy: HFPolicy, family: TaskFamily, cfg: GRPOConfig) -> Trainer[Any]:
    """The variant's trainer of `cfg`, by its type.

    Args:
        policy: The policy to train.
        family: The task family.
        cfg: A variant's configuration (`configs.py`).

    Returns:
        The trainer, ready to `run`.
    """
    return trainer_class(cfg)(policy, family, cfg)


def replay_summary(buffer: FIFOReplayBuffer[Any]) -> dict[str, Any]:
    """How the buffer was used over a run: lifetime use counts of the evicted rollouts (their
    whole life is over) and of the rollouts still buffered, and the draw totals.

    Args:
        buffer: The run's replay buffer.

    Returns:
        `{"lifetime_uses": {count: rollouts}, "buffered_uses": {...}, "pushed", "drawn",
        "evicted", "never_drawn_share"}` (the share among evicted rollouts).
    """
    lifetime = Counter(s.uses for s in buffer.evicted)
    return {
        "lifetime_uses": dict(sorted(lifetime.items())),
        "buffered_uses": dict(sorted(Counter(s.uses for s in buffer.stored()).items())),
        "pushed": buffer.pushed,
        "drawn": buffer.drawn,
        "evicted": len(buffer.evicted),
        "never_drawn_share": lifetime[0] / max(len(buffer.evicted), 1),
    }
