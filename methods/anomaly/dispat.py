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

In both, `anchor` weights the ordinary likelihood of real rows during self-play so the policy
stays a model of normal rows (our choice). The anomaly score is the tuned model's NLL as in AnoLLM,
plus `critic_weight`·(−critic) for the variational variant.
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
    samples: int = 64
    steps: int = 40
    lr: float = 1e-3
    batch: int = 16
    #: λ of the implicit critic T = λ·log(π_θ/π_t).
    lam: float = 0.05
    #: Weight of the real rows' NLL during self-play.
    anchor: float = 1.0
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
        with torch_threads(self.config.threads):
            for iteration in range(self.play.iterations):
                self.report.rounds.append(self._round(rows, iteration))
        self.model.eval()
        return self.report

    def sequence_logprob(self, model: Any, texts: Sequence[str]) -> Any:
        """log π(x) of each whole text (sum over its tokens)."""
        ids, mask = encode(self.tokenizer, texts)
        return token_logprobs(model, ids, mask).sum(dim=1)

    def _samples(self, rows: Sequence[Row], iteration: int) -> list[str]:
        longest = max(len(self.text(r)) for r in rows[:32]) + 16
        texts = sample_texts(
            self.model,
            self.tokenizer,
            self.play.samples,
            max_new_tokens=longest,
            seed=self.config.seed * 1000 + iteration,
        )
        return [t for t in texts if t.strip()] or ["?"]

    def _round(self, rows: Sequence[Row], iteration: int) -> dict[str, float]:
        import torch

        self.model.eval()
        generated = self._samples(rows, iteration)
        reference = copy.deepcopy(self.model).eval()
        for parameter in reference.parameters():
            parameter.requires_grad_(False)
        if self.play.variant == "variational":
            critic_bound = self._train_critic(rows, generated)
        optimiser = torch.optim.AdamW(self.model.parameters(), lr=self.play.lr)
        self.model.train()
        bounds: list[float] = []
        for _ in range(self.play.steps):
            real = [self.text(self._rng.choice(rows)) for _ in range(self.play.batch)]
            fake = [self._rng.choice(generated) for _ in range(self.play.batch)]
            if self.play.variant == "implicit":
                with torch.no_grad():
                    ref_real = self.sequence_logprob(reference, real)
                    ref_fake = self.sequence_logprob(reference, fake)
                t_real = self.play.lam * (self.sequence_logprob(self.model, real) - ref_real)
                t_fake = self.play.lam * (self.sequence_logprob(self.model, fake) - ref_fake)
                bound = sample_bound(t_real, t_fake, self.fdiv)
                loss = -bound
            else:
                with torch.no_grad():
                    raw = self._critic_values(fake)
                    reward = self.fdiv.conjugate(self.fdiv.activation(raw))
                    reward = torch.nan_to_num(reward, posinf=0.0)
                    advantage = reward - reward.mean()
                loss = -(advantage * self.sequence_logprob(self.model, fake)).mean() / max(
                    1, len(fake[0])
                )
                bound = torch.tensor(critic_bound)
            total = loss + self.play.anchor * self.nll_loss(real)
            optimiser.zero_grad()
            total.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            optimiser.step()
            bounds.append(float(bound.detach()))
        self.model.eval()
        return {
            "iteration": float(iteration),
            "bound_first": bounds[0],
            "bound_last": bounds[-1],
            "generated": float(len(generated)),
        }

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

    def _critic_values(self, texts: Sequence[str]) -> Any:
        return self.critic(self._features(texts)).squeeze(-1)

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
            critic = self._critic_values([self.text(r, range(len(self.columns))) for r in rows])
        return scores - self.play.critic_weight * critic.numpy()
