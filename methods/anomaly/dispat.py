"""AnoLLM and DiSPaT: language-model anomaly scores for table rows.

**AnoLLM** (Tsai et al., ICLR 2025), the baseline: rows are serialized as text in random column
orders (`serialize.py`), a causal LM is fine-tuned on normal rows, and a row's anomaly score is
the negative log-likelihood of its value tokens averaged over several column permutations.

**DiSPaT** (Vuong et al., ICML 2026; only the abstract was available, so everything past it is our
reconstruction): start from the AnoLLM model and run self-play. At iteration t the current policy
π_t samples rows, which serve as pseudo-anomalies for a critic that separates them from the real
normal rows, and the policy is updated to shrink the f-divergence D_f(P_normal ‖ π_θ) that the
critic bounds from below (`fdiv.py`). Two variants, `SelfPlayConfig.variant`:

- `implicit` (SPIN-style): the critic is the policy itself, T_θ(x) = λ·(log π_θ(x) − log π_t(x)),
  and θ maximises the variational bound E_real[a(T_θ)] − E_{π_t}[f*(a(T_θ))] (a: the f's
  activation). For f = JS this is a logistic loss that raises real rows' likelihood against
  the policy's own samples, as SPIN does with a pairwise loss.
- `variational` (f-GAN): an explicit critic, an MLP on the frozen AnoLLM model's mean hidden
  state, maximises the same bound; the policy then follows the score-function gradient of
  E_{π_θ}[f*(a(T(x)))] (its samples made to look real to the critic), with a mean baseline.

Each update step draws fresh generated rows, so every gradient is on-policy for its
objective: the implicit bound is an expectation over the round's frozen π_t (SPIN's opponent),
so its rows come from π_t; the variational policy gradient is an expectation over π_θ, so its
rows come from the current policy at that step (the importance ratio is then exactly 1).

In both, `anchor` weights the ordinary likelihood of real rows during self-play so the policy
stays a model of normal rows (our choice); `play_weight=0` keeps only it (the ablation). The
anomaly score is the tuned model's NLL as in AnoLLM, plus `critic_weight`·(−critic) for the
variational variant.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from docket.core.tiny_models import ascii_tokenizer, tiny_causal_lm, torch_threads

from .fdiv import divergence, sample_bound
from .serialize import Column, Value, permutations, serialize
from .tiny_lm import encode, sample_texts, token_logprobs

Row = Mapping[str, Value]


@dataclass(frozen=True)
class LMConfig:
    """The language model and its fine-tuning on normal rows (AnoLLM)."""

    hidden: int = 64
    layers: int = 2
    heads: int = 4
    steps: int = 300
    batch: int = 16
    lr: float = 3e-3
    #: Column orders a score is averaged over (the identity and random ones).
    score_permutations: int = 4
    seed: int = 0
    #: A checkpoint directory to fine-tune instead of the tiny random model (GPU-scale runs).
    base_model: str = ""
    #: torch CPU threads while fitting and scoring (tiny models run fastest on one; 0: as is).
    threads: int = 1


@dataclass(frozen=True)
class SelfPlayConfig:
    """DiSPaT's self-play (docket's defaults: the paper's were not available)."""

    variant: str = "implicit"  # "implicit" (SPIN-style) or "variational" (f-GAN)
    f: str = "js"
    iterations: int = 2
    #: Size of each round's evaluation batch (real rows and π_t samples no step uses), and
    #: the π_t samples the explicit critic is fitted on (variational).
    samples: int = 64
    steps: int = 40
    lr: float = 1e-3
    #: Real rows and freshly generated rows per update step.
    batch: int = 16
    #: λ of the implicit critic T = λ·log(π_θ/π_t).
    lam: float = 0.05
    #: Weight of the real rows' NLL during self-play.
    anchor: float = 1.0
    #: Weight of the self-play term. 0 switches self-play off: the same steps on the anchor
    #: alone, i.e. more fine-tuning (the ablation).
    play_weight: float = 1.0
    critic_hidden: int = 64
    critic_steps: int = 100
    critic_weight: float = 0.0


@dataclass
class FitReport:
    """Losses of the fine-tuning and of each self-play iteration."""

    sft_losses: list[float] = field(default_factory=list)
    rounds: list[dict[str, float]] = field(default_factory=list)


class TableLM:
    """AnoLLM: a causal LM fine-tuned on serialized normal rows; score = value-token NLL."""

    def __init__(self, columns: Sequence[Column], config: LMConfig | None = None) -> None:
        self.columns = list(columns)
        self.config = config or LMConfig()
        self.model: Any = None
        self.tokenizer: Any = None
        self.report = FitReport()
        self._rng = random.Random(self.config.seed)

    def _build(self) -> None:
        if self.config.base_model:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(self.config.base_model)
            if self.tokenizer.pad_token_id is None:
                self.tokenizer.pad_token = self.tokenizer.eos_token
            if self.tokenizer.bos_token_id is None:
                self.tokenizer.bos_token = self.tokenizer.eos_token
            self.model = AutoModelForCausalLM.from_pretrained(self.config.base_model)
            return
        self.tokenizer = ascii_tokenizer()
        self.model = tiny_causal_lm(
            len(self.tokenizer),
            self.config.hidden,
            self.config.layers,
            self.config.heads,
            seed=self.config.seed,
        )

    def text(self, row: Row, order: Sequence[int] | None = None) -> str:
        """The row as text in a column order (random when None)."""
        if order is None:
            order = list(range(len(self.columns)))
            self._rng.shuffle(order)
        return serialize(row, self.columns, order)[0]

    def nll_loss(self, texts: Sequence[str]) -> Any:
        """Mean token NLL of `texts` under the current model."""
        ids, mask = encode(self.tokenizer, texts)
        logp = token_logprobs(self.model, ids, mask)
        return -logp.sum() / mask[:, 1:].sum()

    def fit(self, rows: Sequence[Row]) -> FitReport:
        """Fine-tune on the normal rows, each step in fresh random column orders."""
        with torch_threads(self.config.threads):
            return self._fit(rows)

    def _fit(self, rows: Sequence[Row]) -> FitReport:
        import torch

        if not rows:
            raise ValueError("no training rows")
        self._build()
        torch.manual_seed(self.config.seed)
        optimiser = torch.optim.AdamW(self.model.parameters(), lr=self.config.lr)
        self.model.train()
        for _ in range(self.config.steps):
            batch = [self.text(self._rng.choice(rows)) for _ in range(self.config.batch)]
            loss = self.nll_loss(batch)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            self.report.sft_losses.append(float(loss.detach()))
        self.model.eval()
        return self.report

    def value_nll(self, rows: Sequence[Row], order: Sequence[int]) -> np.ndarray:
        """NLL of each row's value characters in one column order (char-level tokenizer)."""
        import torch

        out = np.zeros(len(rows))
        chunk = 32
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            serialized = [serialize(r, self.columns, order) for r in part]
            ids, mask = encode(self.tokenizer, [t for t, _ in serialized])
            with torch.no_grad():
                logp = token_logprobs(self.model, ids, mask).numpy()
            for i, (_, spans) in enumerate(serialized):
                if self.config.base_model:  # subword tokens: the whole row counts
                    out[start + i] = -logp[i].sum()
                    continue
                # char j of the text is token j + 1, predicted at position j
                out[start + i] = -sum(logp[i, a:b].sum() for a, b in spans)
        return out

    def score(self, rows: Sequence[Row]) -> np.ndarray:
        """Anomaly scores (higher = more anomalous): value NLL averaged over column orders."""
        orders = permutations(len(self.columns), self.config.score_permutations, self.config.seed)
        with torch_threads(self.config.threads):
            return np.mean([self.value_nll(rows, order) for order in orders], axis=0)


class DiSPaT(TableLM):
    """AnoLLM fine-tuning followed by f-divergence self-play against the policy's own samples."""

    def __init__(
        self,
        columns: Sequence[Column],
        config: LMConfig | None = None,
        play: SelfPlayConfig | None = None,
    ) -> None:
        super().__init__(columns, config)
        self.play = play or SelfPlayConfig()
        if self.play.variant not in ("implicit", "variational"):
            raise ValueError(
                f"DiSPaT variant must be implicit or variational, not {self.play.variant!r}"
            )
        self.fdiv = divergence(self.play.f)
        self.critic: Any = None
        self._features_model: Any = None

    def fit(self, rows: Sequence[Row]) -> FitReport:
        """AnoLLM's fine-tuning, then the self-play iterations."""
        super().fit(rows)
        return self.self_play(rows)

    def self_play(self, rows: Sequence[Row]) -> FitReport:
        """The self-play iterations on a fitted model (`fit` runs them after fine-tuning)."""
        if not rows:
            raise ValueError("no training rows")
        with torch_threads(self.config.threads):
            for iteration in range(self.play.iterations):
                self.report.rounds.append(self._round(rows, iteration))
        self.model.eval()
        return self.report

    def sequence_logprob(self, model: Any, texts: Sequence[str]) -> Any:
        """log π(x) of each whole text (sum over its tokens)."""
        ids, mask = encode(self.tokenizer, texts)
        return token_logprobs(model, ids, mask).sum(dim=1)

    def generate(self, model: Any, n: int, max_new_tokens: int) -> list[str]:
        """`n` rows sampled from `model`, seeded from the detector's RNG (an empty one is "?").

        Args:
            model: The policy to sample from (the current π_θ or a round's frozen π_t).
            n: How many rows.
            max_new_tokens: Most tokens per row.

        Returns:
            The sampled texts.
        """
        was_training = model.training
        model.eval()
        seed = self._rng.randrange(2**31)
        texts = sample_texts(model, self.tokenizer, n, max_new_tokens=max_new_tokens, seed=seed)
        model.train(was_training)
        return [t if t.strip() else "?" for t in texts]

    def implicit_critic(self, reference: Any, texts: Sequence[str]) -> Any:
        """T_θ(x) = λ·(log π_θ(x) − log π_t(x)), differentiable in θ (π_t = `reference`)."""
        import torch

        with torch.no_grad():
            before = self.sequence_logprob(reference, texts)
        return self.play.lam * (self.sequence_logprob(self.model, texts) - before)

    def critic_values(self, texts: Sequence[str]) -> Any:
        """The explicit (variational) critic's raw outputs on `texts`."""
        if self.critic is None:
            raise ValueError("the explicit critic exists only after a variational round")
        return self.critic(self._features(texts)).squeeze(-1)

    def check(self, real: Any, fake: Any) -> tuple[float, float]:
        """(variational bound, balanced accuracy) of critic values on real and generated rows.

        A row counts as classified real when its activated value exceeds f'(1), the optimal
        critic where the two densities are equal; a value at f'(1) counts half. The accuracy
        is 0.5 when the critic cannot tell the two apart.

        Args:
            real: Raw critic values on real rows (a tensor).
            fake: Raw critic values on generated rows (a tensor).

        Returns:
            The bound's sample estimate and the mean of the two classes' accuracies.
        """
        import torch

        edge = float(self.fdiv.derivative(torch.tensor(1.0, dtype=torch.float64)))

        def correct(values: Any, sign: float) -> float:
            margin = (self.fdiv.activation(values.detach().double()) - edge) * sign
            tied = margin.abs() <= 1e-12
            return float(((margin > 0) & ~tied).double().mean() + 0.5 * tied.double().mean())

        bound = float(sample_bound(real.detach(), fake.detach(), self.fdiv))
        return bound, 0.5 * (correct(real, 1.0) + correct(fake, -1.0))

    def _round(self, rows: Sequence[Row], iteration: int) -> dict[str, float]:
        """One self-play round; its record (bounds and critic accuracies at start and end).

        Every step draws fresh generated rows: from the round's frozen π_t for the implicit
        variant (the distribution its bound's expectation is over, as in SPIN) and from the
        current π_θ for the variational one (the score-function gradient of E_{π_θ}[f*(a(T))]
        is an expectation over π_θ). The evaluation batch (`samples` real rows and as many π_t
        samples, none used by a step) is scored at the start and at the end.
        """
        import torch

        play = self.play
        longest = max(len(self.text(r)) for r in rows[:32]) + 16
        self.model.eval()
        reference = copy.deepcopy(self.model).eval()
        for parameter in reference.parameters():
            parameter.requires_grad_(False)
        eval_real = [self.text(self._rng.choice(rows)) for _ in range(play.samples)]
        eval_fake = self.generate(reference, play.samples, longest)
        record = {"iteration": float(iteration)}
        if play.variant == "variational":
            record["critic_fit_bound"] = self._train_critic(
                rows, self.generate(reference, play.samples, longest)
            )
        start = self._evaluate(reference, eval_real, eval_fake)
        record["eval_bound_start"], record["eval_accuracy_start"] = start
        optimiser = torch.optim.AdamW(self.model.parameters(), lr=play.lr)
        self.model.train()
        bounds: list[float] = []
        for _ in range(play.steps):
            real = [self.text(self._rng.choice(rows)) for _ in range(play.batch)]
            loss = play.anchor * self.nll_loss(real)
            if play.play_weight:
                if play.variant == "implicit":
                    fake = self.generate(reference, play.batch, longest)  # x' ~ π_t
                    bound = sample_bound(
                        self.implicit_critic(reference, real),
                        self.implicit_critic(reference, fake),
                        self.fdiv,
                    )
                    play_loss = -bound
                else:
                    fake = self.generate(self.model, play.batch, longest)  # x ~ π_θ, this step
                    with torch.no_grad():
                        fake_values = self.critic_values(fake)
                        real_values = self.critic_values(real)
                        bound = sample_bound(real_values, fake_values, self.fdiv)
                        reward = self.fdiv.conjugate(self.fdiv.activation(fake_values))
                        reward = torch.nan_to_num(reward, posinf=0.0)
                        advantage = reward - reward.mean()
                    length = sum(len(t) for t in fake) / len(fake) + 1
                    logp = self.sequence_logprob(self.model, fake)
                    play_loss = -(advantage * logp).mean() / length
                loss = loss + play.play_weight * play_loss
                bounds.append(float(bound.detach()))
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            optimiser.step()
        self.model.eval()
        if play.variant == "variational":  # the fixed critic against the updated policy
            eval_fake = self.generate(self.model, play.samples, longest)
        end = self._evaluate(reference, eval_real, eval_fake)
        record["eval_bound_end"], record["eval_accuracy_end"] = end
        record["bound_first"] = bounds[0] if bounds else float("nan")
        record["bound_last"] = bounds[-1] if bounds else float("nan")
        record["generated"] = float(len(bounds) * play.batch)
        return record

    def _evaluate(
        self, reference: Any, real: Sequence[str], fake: Sequence[str]
    ) -> tuple[float, float]:
        """`check` of the round's critic (implicit: T_θ against π_t; else the explicit one)."""
        import torch

        with torch.no_grad():
            if self.play.variant == "implicit":
                return self.check(
                    self.implicit_critic(reference, real), self.implicit_critic(reference, fake)
                )
            return self.check(self.critic_values(real), self.critic_values(fake))

    def _features(self, texts: Sequence[str]) -> Any:
        """Mean last hidden state of the frozen fine-tuned model (the critic's input)."""
        import torch

        ids, mask = encode(self.tokenizer, texts)
        with torch.no_grad():
            hidden = self._features_model(
                input_ids=ids, attention_mask=mask, output_hidden_states=True
            ).hidden_states[-1]
        weights = mask[..., None].float()
        return (hidden * weights).sum(1) / weights.sum(1)

    def _train_critic(self, rows: Sequence[Row], generated: list[str]) -> float:
        """Fit the explicit critic to maximise the variational bound; its final bound."""
        import torch

        if self._features_model is None:
            self._features_model = copy.deepcopy(self.model).eval()
        width = self._features_model.config.hidden_size
        torch.manual_seed(self.config.seed)
        self.critic = torch.nn.Sequential(
            torch.nn.Linear(width, self.play.critic_hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(self.play.critic_hidden, 1),
        )
        optimiser = torch.optim.Adam(self.critic.parameters(), lr=1e-3)
        fake_features = self._features(generated)
        real_features = self._features([self.text(r) for r in rows])
        bound = torch.tensor(0.0)
        for _ in range(self.play.critic_steps):
            real_pick = torch.randint(len(real_features), (self.play.batch,))
            fake_pick = torch.randint(len(fake_features), (self.play.batch,))
            bound = sample_bound(
                self.critic(real_features[real_pick]).squeeze(-1),
                self.critic(fake_features[fake_pick]).squeeze(-1),
                self.fdiv,
            )
            optimiser.zero_grad()
            (-bound).backward()
            optimiser.step()
        return float(bound.detach())

    def score(self, rows: Sequence[Row]) -> np.ndarray:
        scores = super().score(rows)
        if self.critic is None or self.play.critic_weight == 0:
            return scores
        import torch

        with torch.no_grad():
            critic = self.critic_values([self.text(r, range(len(self.columns))) for r in rows])
        return scores - self.play.critic_weight * critic.numpy()
