"""A small bidirectional mask predictor in plain PyTorch, with a window KV cache.

The network is a pre-norm transformer encoder with tied embeddings: given a sequence in which
some positions hold the mask token, it predicts every position's token (LLaDA-style
masked-diffusion LM, no time conditioning). Positions enter three ways: rotary attention, a
learned absolute position embedding and a learned embedding of the offset from the answer's
first position (`answer_start`, the prompt length), so a model this small can align answer
positions with prompt positions (copy: fixed absolute source; reverse: fixed offset before the
answer) after minutes of CPU training. Both learned tables are clamped at their ends, so an
answer region far longer than in training (LLaDA's 256 tokens of EOS-filled answer) stays in
distribution. A model trained with few-shot preambles (`turn_separator_id` set) counts absolute
positions from the start of the question's turn and gives earlier turns an embedding of their
own, so the copy source stays where it was without a preamble. Its forward has the cache API
of DSB's modified LLaDA code (lizhuo-luo/DSB):

- `model(x, use_cache=True)`: a full forward over all positions; returns the logits and a
  `WindowCache` with every layer's keys and values;
- `model(x_window, past_key_values=cache, replace_position=mask)`: `mask` is a bool vector over
  the full length and `x_window` the tokens at its True positions (in order). Each layer computes
  queries, keys and values for the window only, writes the keys and values into the cache at
  those positions and attends the window's queries over the whole cache. Everything outside
  the window is served from the cache as it was last computed.

A full forward is the window forward of all positions on an empty cache (the same code), so a
window that covers the whole sequence gives bit-identical logits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

MODEL_TYPE = "docket_toy_mdlm"


@dataclass(frozen=True)
class ToyConfig:
    """Sizes and special ids of the toy mask predictor (`config.json` of a checkpoint)."""

    vocab_size: int
    mask_token_id: int
    eos_token_id: int
    hidden: int = 128
    layers: int = 4
    heads: int = 4
    mlp: int = 512
    rope_theta: float = 10000.0
    max_length: int = 512
    #: Learned absolute positions; later positions share the last embedding.
    absolute_positions: int = 32
    #: Learned offsets from the answer start in [-offset_range, offset_range] (clamped), so
    #: an answer region longer than any seen in training still reads as "far into the answer".
    offset_range: int = 20
    #: The token that ends a turn (the newline of the toy chat template). When set, absolute
    #: positions count from the start of the last turn (the question), and every token of
    #: earlier turns (a few-shot preamble) gets one extra embedding of its own; when None,
    #: they count from the start of the sequence. (A multi-line message reads as several
    #: turns: the toy tasks are one line each.)
    turn_separator_id: int | None = None

    def to_json(self) -> dict[str, object]:
        """The `config.json` fields (with `model_type`)."""
        return {"model_type": MODEL_TYPE, **self.__dict__}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ToyConfig:
        """A config from `config.json` (unknown fields are ignored)."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)  # type: ignore[arg-type]


@dataclass
class WindowCache:
    """Per-layer keys and values over the full sequence: `[batch, heads, length, head_dim]`."""

    keys: list[torch.Tensor] = field(default_factory=list)
    values: list[torch.Tensor] = field(default_factory=list)

    @property
    def length(self) -> int:
        return int(self.keys[0].shape[2]) if self.keys else 0


@dataclass
class MaskLMOutput:
    """Logits for the positions given (`[batch, window, vocab]`) and the updated cache."""

    logits: torch.Tensor
    past_key_values: WindowCache | None = None


def _rope(length: int, dim: int, theta: float, device: torch.device) -> torch.Tensor:
    """Rotary angles `[length, dim/2]`."""
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim))
    return torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv)


def _rotate(x: torch.Tensor, rotation: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Apply the (cos, sin) of rotary angles `[window, dim/2]` to `x` `[..., window, dim]`."""
    half = x.shape[-1] // 2
    cos, sin = rotation
    first, second = x[..., :half], x[..., half:]
    return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)


class _Block(nn.Module):
    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        self.heads = config.heads
        self.head_dim = config.hidden // config.heads
        self.norm1 = nn.LayerNorm(config.hidden)
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden)
        self.out = nn.Linear(config.hidden, config.hidden)
        self.norm2 = nn.LayerNorm(config.hidden)
        self.mlp = nn.Sequential(
            nn.Linear(config.hidden, config.mlp), nn.GELU(), nn.Linear(config.mlp, config.hidden)
        )

    def forward(
        self,
        hidden: torch.Tensor,
        rotation: tuple[torch.Tensor, torch.Tensor],
        cache_kv: tuple[torch.Tensor, torch.Tensor] | None,
        positions: torch.Tensor | slice | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One layer on the window; returns (hidden, full keys, full values)."""
        batch, window, width = hidden.shape
        qkv = (
            self.qkv(self.norm1(hidden))
            .view(batch, window, 3, self.heads, self.head_dim)
            .permute(2, 0, 3, 1, 4)
        )
        q, k = _rotate(qkv[:2], rotation)  # queries and keys in one call
        v = qkv[2]
        if cache_kv is None:
            keys, values = k, v
        else:
            keys, values = cache_kv
            keys[:, :, positions] = k
            values[:, :, positions] = v
        attended = F.scaled_dot_product_attention(q, keys, values)
        hidden = hidden + self.out(attended.transpose(1, 2).reshape(batch, window, width))
        hidden = hidden + self.mlp(self.norm2(hidden))
        return hidden, keys, values


class ToyMaskPredictor(nn.Module):
    """Bidirectional transformer mask predictor with a `replace_position` window cache."""

    rotary_cos: torch.Tensor
    rotary_sin: torch.Tensor

    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        if config.hidden % config.heads or (config.hidden // config.heads) % 2:
            raise ValueError("hidden must split into heads of even size")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.hidden)
        earlier_turns = 0 if config.turn_separator_id is None else 1
        self.absolute = nn.Embedding(config.absolute_positions + earlier_turns, config.hidden)
        self.offset = nn.Embedding(2 * config.offset_range + 1, config.hidden)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.hidden)
        angles = _rope(
            config.max_length, config.hidden // config.heads, config.rope_theta, torch.device("cpu")
        )
        self.register_buffer("rotary_cos", angles.cos(), persistent=False)
        self.register_buffer("rotary_sin", angles.sin(), persistent=False)
        for table in (self.embed, self.absolute, self.offset):
            nn.init.normal_(table.weight, std=0.02)

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    def turn_start(self, prompt: Sequence[int]) -> int:
        """First position of the prompt's last turn: after the second-to-last turn separator
        (the last one closes the question, before the generation prompt); 0 without turns."""
        separator = self.config.turn_separator_id
        if separator is None:
            return 0
        ends = [index for index, token in enumerate(prompt) if token == separator]
        return ends[-2] + 1 if len(ends) >= 2 else 0

    def forward(
        self,
        input_ids: torch.Tensor,
        answer_start: torch.Tensor | int,
        past_key_values: WindowCache | None = None,
        replace_position: torch.Tensor | None = None,
        use_cache: bool = False,
        turn_start: torch.Tensor | int = 0,
    ) -> MaskLMOutput:
        """Logits of `input_ids` (the window's tokens when a cache and `replace_position` are
        given, else the whole sequence); `answer_start` is the prompt length and `turn_start`
        the first position of the last turn (`turn_start()`), per row or one int."""
        if (past_key_values is None) != (replace_position is None):
            raise ValueError("past_key_values and replace_position go together")
        if self.config.turn_separator_id is None and bool(torch.as_tensor(turn_start).ne(0).any()):
            raise ValueError("turn_start needs a model trained with turns (turn_separator_id)")
        if past_key_values is None:
            length = input_ids.shape[1]
            if length > self.config.max_length:
                raise ValueError(
                    f"sequence of {length} tokens exceeds max_length {self.config.max_length}"
                )
            positions: torch.Tensor | slice | None = None
            where = torch.arange(length, device=input_ids.device)
            rotation = (self.rotary_cos[:length], self.rotary_sin[:length])
        else:
            assert replace_position is not None
            mask = replace_position.reshape(-1)
            if mask.shape[0] != past_key_values.length:
                raise ValueError("replace_position must cover the cached length")
            where = mask.nonzero().squeeze(-1)
            if where.shape[0] != input_ids.shape[1]:
                raise ValueError("input_ids must hold exactly the replaced positions")
            positions = _as_slice(where)
            rotation = (self.rotary_cos[positions], self.rotary_sin[positions])
        start = torch.as_tensor(answer_start, device=input_ids.device).reshape(-1, 1)
        span = self.config.offset_range
        offsets = (where[None, :] - start).clamp(-span, span) + span
        hidden = self.embed(input_ids) + self.offset(offsets) + self._absolute(where, turn_start)
        cache = WindowCache()
        for index, block in enumerate(self.blocks):
            cached = (
                None
                if past_key_values is None
                else (past_key_values.keys[index], past_key_values.values[index])
            )
            hidden, keys, values = block(hidden, rotation, cached, positions)
            if cached is None and use_cache:  # own storage: window forwards write into it
                keys, values = keys.clone(), values.clone()
            cache.keys.append(keys)
            cache.values.append(values)
        logits = F.linear(self.norm(hidden), self.embed.weight)
        keep = use_cache or past_key_values is not None
        return MaskLMOutput(logits=logits, past_key_values=cache if keep else None)

    def _absolute(self, where: torch.Tensor, turn_start: torch.Tensor | int) -> torch.Tensor:
        """Absolute position embeddings `[batch or 1, window, hidden]` of positions `where`."""
        last = self.config.absolute_positions - 1
        if self.config.turn_separator_id is None:
            return self.absolute(where.clamp(max=last))[None]
        start = torch.as_tensor(turn_start, device=where.device).reshape(-1, 1)
        relative = where[None, :] - start
        index = torch.where(relative < 0, last + 1, relative.clamp(min=0, max=last))
        return self.absolute(index)


def _as_slice(positions: torch.Tensor) -> torch.Tensor | slice:
    """`positions` (sorted, distinct) as a slice when they are one contiguous run (DSB's
    windows are), so cache writes are plain slice copies; otherwise the index itself."""
    count = positions.shape[0]
    if count == 0:
        return positions
    first, last = int(positions[0]), int(positions[-1])
    return slice(first, last + 1) if last - first + 1 == count else positions


def masked_diffusion_loss(
    model: ToyMaskPredictor,
    ids: torch.Tensor,
    answer_start: torch.Tensor,
    generator: torch.Generator,
    eps: float = 1e-3,
    turn_start: torch.Tensor | None = None,
) -> torch.Tensor:
    """LLaDA's SFT objective: mask each answer token with probability t ~ U(eps, 1) per row
    and weight the cross-entropy of the masked tokens by 1/t, normalised by answer length."""
    batch, length = ids.shape
    t = eps + (1 - eps) * torch.rand(batch, 1, generator=generator, device=ids.device)
    in_answer = torch.arange(length, device=ids.device)[None, :] >= answer_start[:, None]
    drawn = torch.rand(batch, length, generator=generator, device=ids.device)
    masked = in_answer & (drawn < t)
    noisy = ids.masked_fill(masked, model.config.mask_token_id)
    turns = 0 if turn_start is None else turn_start
    logits = model(noisy, answer_start, turn_start=turns).logits
    token_loss = F.cross_entropy(logits.transpose(1, 2), ids, reduction="none")
    weighted = (token_loss * masked / t).sum(dim=1) / in_answer.sum(dim=1).clamp(min=1)
    return weighted.mean()


def init_weights(model: ToyMaskPredictor, seed: int) -> None:
    """Deterministic small-normal initialisation (scaled output projections)."""
    generator = torch.Generator().manual_seed(seed)
    depth_scale = 1 / math.sqrt(2 * model.config.layers)
    for name, parameter in model.named_parameters():
        if parameter.dim() < 2:
            continue
        std = 0.02 * (depth_scale if name.endswith(("out.weight", "mlp.2.weight")) else 1.0)
        with torch.no_grad():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
