"""SHINE: a hypernetwork that turns a context into a LoRA adapter in one forward pass.

Pipeline ("as released" = as in the authors' released code, MuLabPKU/SHINE; "ours" = our
reconstruction where the paper and the code leave a choice open):

1. Memory extraction (as released): `M` learned memory embeddings are appended after the context
   tokens and the *frozen* LLM reads them with a trainable low-rank meta-LoRA active; forward
   hooks on every decoder layer collect the hidden states at the memory positions,
   `[n, L, M, d]`.
2. M2P transformer (as released): learned layer and slot positions are added, then encoder layers
   alternate the attention axis (across layers for each slot, then across slots within each
   layer; `layer_first`), post-norm, GELU, no dropout.
3. Decoding (as released): each layer's `M*d` output is read as `[A | B]` blocks of the targets in
   order (q, k, v, o, gate, up, down), both times sqrt(scale), so the update is
   `scale * (x A) B`; `M = numel_per_layer / d` exactly (knob `pad_memory` rounds up, ours).
4. Answering: the frozen LLM with the generated adapter (functional, one per sample) and the
   question alone in the prompt.
5. Training: reconstruction/completion pretraining and QA instruction tuning, next-token cross
   entropy on the targets (+ optional L1 on the generated vector, weight 0 by default); only
   the memory embeddings, the meta-LoRA and the M2P transformer train.

As a `docket/local` method: `--model docket/local/DIR -M method=shine -M context=FILE` where
DIR is the backbone checkpoint and `DIR/shine/` (or `-M hypernet=DIR2`) the trained hypernet.
FILE is a text file (one context for every call) or JSONL rows `{"id", "text"}`; with several
contexts, each prompt names its context as `[context: ID]` (`-M context_marker=REGEX` with a
group `id` changes that). Adapters are generated once per context and cached.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from docket.core.jsonl import parse_lines
from docket.methods.adaptation.lm import (
    freeze,
    prompt_ids,
    target_ids,
    target_logprobs,
    text_ids,
)
from docket.methods.adaptation.lora import (
    DEFAULT_TARGETS,
    Adapters,
    LoraLayout,
    decoder_layers,
    functional_lora,
    layout_for,
)
from docket.methods.adaptation.plugin import decode_under, save_module, with_counters
from docket.methods.adaptation.progress import step_bar
from docket.methods.local.registry import method_plugin
from docket.methods.local.settings import knob

CONFIG_FILE = "shine_config.json"
WEIGHTS_FILE = "hypernet.safetensors"
DEFAULT_MARKER = r"\[context:\s*(?P<id>[^\]\s]+)\s*\]"
RECON_PROMPT = "Repeat the text you have read."
COMPLETION_PROMPT = "Complete the text you have read."


@dataclass(frozen=True)
class ShineConfig:
    """Hypernetwork hyper-parameters (release defaults for Qwen3-8B noted)."""

    rank: int = 8  # generated LoRA rank [CODE: 8; ablations 4/16/32]
    meta_rank: int = 128  # meta-LoRA rank during memory extraction [CODE: 128]
    targets: tuple[str, ...] = DEFAULT_TARGETS
    scale: float = 1e-3  # A and B times sqrt(scale) [CODE: 1e-3]
    m2p_layers: int = 4  # [CODE: 4]
    m2p_heads: int = 0  # 0: the largest of 32, 16, 8, 4, 2, 1 dividing the hidden size [CODE: 32]
    m2p_ffn: int = 0  # 0: twice the hidden size [CODE: 8192 for d=4096]
    layer_first: bool = True  # the first M2P layer attends across layers (as released)
    pad_memory: bool = False  # round M up when the layout does not divide (ours)
    memory_init_std: float = 0.0  # memory embeddings start at zero (as released)
    max_context_tokens: int = 1024  # [CODE: ~1141]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ShineConfig:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "targets" in values:
            values["targets"] = tuple(values["targets"])
        return cls(**values)


class M2PTransformer(nn.Module):
    """Memory-to-parameter transformer: `[n, L, M, d]` memory states -> `[n, L, M*d]`."""

    def __init__(
        self,
        num_layers: int,
        num_memory: int,
        hidden: int,
        *,
        depth: int = 4,
        heads: int = 0,
        ffn: int = 0,
        layer_first: bool = True,
    ) -> None:
        super().__init__()
        heads = heads or next(h for h in (32, 16, 8, 4, 2, 1) if hidden % h == 0)
        self.layer_pe = nn.Parameter(torch.zeros(num_layers, hidden))
        self.token_pe = nn.Parameter(torch.zeros(num_memory, hidden))
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                hidden,
                heads,
                ffn or 2 * hidden,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=False,
            )
            for _ in range(depth)
        )
        self.layer_first = layer_first

    def across_layers(self, index: int) -> bool:
        """Whether block `index` attends across layers (else across memory slots)."""
        return (index % 2 == 0) == self.layer_first

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        n, layers, slots, hidden = states.shape
        x = states + self.layer_pe[:, None, :] + self.token_pe[None, :, :]
        for index, block in enumerate(self.blocks):
            if self.across_layers(index):
                x = block(x.transpose(1, 2).reshape(n * slots, layers, hidden))
                x = x.reshape(n, slots, layers, hidden).transpose(1, 2)
            else:
                x = block(x.reshape(n * layers, slots, hidden)).reshape(n, layers, slots, hidden)
        return x.reshape(n, layers, slots * hidden)


class ShineHypernet(nn.Module):
    """Memory embeddings, meta-LoRA and M2P transformer for one backbone layout."""

    def __init__(self, config: ShineConfig, layout: LoraLayout, hidden: int) -> None:
        super().__init__()
        self.config = config
        self.layout = layout
        self.hidden = hidden
        self.num_memory = layout.memory_tokens(hidden, pad=config.pad_memory)
        self.memory = nn.Parameter(torch.randn(self.num_memory, hidden) * config.memory_init_std)
        root = config.scale**0.5
        # meta-LoRA as in the release: A random * sqrt(scale), B zeros; one pair per module
        self.meta_a = nn.ParameterList(
            nn.Parameter(torch.randn(1, t.in_features, config.meta_rank) * root)
            for _ in range(layout.num_layers)
            for t in layout.targets
        )
        self.meta_b = nn.ParameterList(
            nn.Parameter(torch.zeros(1, config.meta_rank, t.out_features))
            for _ in range(layout.num_layers)
            for t in layout.targets
        )
        self.m2p = M2PTransformer(
            layout.num_layers,
            self.num_memory,
            hidden,
            depth=config.m2p_layers,
            heads=config.m2p_heads,
            ffn=config.m2p_ffn,
            layer_first=config.layer_first,
        )

    @classmethod
    def for_backbone(cls, backbone: nn.Module, config: ShineConfig) -> ShineHypernet:
        """A fresh hypernet sized for `backbone` (its decoder layers and hidden size)."""
        layout = layout_for(backbone, config.rank, config.targets)
        return cls(config, layout, int(cast(Any, backbone).config.hidden_size))

    def meta_adapters(self) -> Adapters:
        """The meta-LoRA, shared by every sample (batch of one)."""
        return dict(
            zip(self.layout.paths(), zip(self.meta_a, self.meta_b, strict=True), strict=True)
        )

    def memory_states(self, backbone: nn.Module, contexts: Sequence[Sequence[int]]) -> torch.Tensor:
        """Hidden states at the memory positions after every decoder layer, `[n, L, M, d]`.

        Each row is `context + memory`, right-padded: causal attention never lets a real or
        memory position see the padding, so every sample gets the states of its own run.
        """
        if not contexts:
            raise ValueError("no contexts given")
        embed = cast(Any, backbone).get_input_embeddings()
        device = self.memory.device
        rows = [
            torch.cat(
                [embed(torch.tensor(list(ids), dtype=torch.long, device=device)), self.memory]
            )
            for ids in contexts
        ]
        lengths = [row.shape[0] for row in rows]
        inputs = nn.utils.rnn.pad_sequence(rows, batch_first=True)
        _, layers = decoder_layers(backbone)
        collected: list[torch.Tensor] = []

        def keep(module: nn.Module, args: Any, output: Any) -> None:
            collected.append(output[0] if isinstance(output, tuple) else output)

        handles = [layer.register_forward_hook(keep) for layer in layers]
        try:
            with functional_lora(backbone, self.meta_adapters()):
                base = getattr(backbone, cast(Any, backbone).base_model_prefix, backbone)
                base(inputs_embeds=inputs, use_cache=False)
        finally:
            for handle in handles:
                handle.remove()
        m = self.num_memory
        per_layer = [
            torch.stack([states[i, length - m : length] for i, length in enumerate(lengths)])
            for states in collected
        ]
        return torch.stack(per_layer, dim=1)

    def forward(
        self, backbone: nn.Module, contexts: Sequence[Sequence[int]]
    ) -> tuple[Adapters, torch.Tensor]:
        """Adapters for each context (batch axis = context) and the raw generated vectors."""
        vectors = self.m2p(self.memory_states(backbone, contexts))
        return self.layout.split(vectors, self.config.scale), vectors


# --- training data -------------------------------------------------------------------


@dataclass(frozen=True)
class ShineExample:
    """One training pair: the context the adapter is made from, the prompt and its target."""

    context: str
    prompt: str
    target: str


def pretraining_examples(
    texts: Sequence[str],
    *,
    seed: int = 0,
    completion_freq: float = 0.5,
    min_keep: float = 0.7,
    max_keep: float = 0.9,
    recon_prompt: str = RECON_PROMPT,
    completion_prompt: str = COMPLETION_PROMPT,
) -> list[ShineExample]:
    """Reconstruction / completion pairs [CODE: 50/50 mix, context = first 70-90 % of the
    words for completion, target = the whole text]."""
    rng = random.Random(seed)
    examples = []
    for text in texts:
        words = text.split()
        if len(words) > 1 and rng.random() < completion_freq:
            keep = max(1, int(len(words) * rng.uniform(min_keep, max_keep)))
            examples.append(ShineExample(" ".join(words[:keep]), completion_prompt, text))
        else:
            examples.append(ShineExample(text, recon_prompt, text))
    return examples


@dataclass
class EncodedBatch:
    contexts: list[list[int]]
    prompts: list[list[int]]
    targets: list[list[int]]


def encode(tokenizer: Any, examples: Sequence[ShineExample], max_context: int) -> EncodedBatch:
    """Token ids of a batch of examples."""
    return EncodedBatch(
        contexts=[text_ids(tokenizer, e.context, max_context) for e in examples],
        prompts=[prompt_ids(tokenizer, e.prompt) for e in examples],
        targets=[target_ids(tokenizer, e.target) for e in examples],
    )


def shine_loss(
    hypernet: ShineHypernet, backbone: nn.Module, batch: EncodedBatch, l1: float = 0.0
) -> torch.Tensor:
    """Token-mean cross entropy of the targets with each sample's generated adapter."""
    adapters, vectors = hypernet(backbone, batch.contexts)
    logprobs = target_logprobs(backbone, adapters, batch.prompts, batch.targets)
    loss = -torch.cat(logprobs).mean()
    if l1:
        loss = loss + l1 * vectors.abs().sum()
    return loss


# --- training -----------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """Optimisation settings [CODE: lr 5e-5, AdamW wd 0.01, warmup 200, grad-accum 4, clip 1.0;
    the tiny CPU models here need a larger lr]."""

    steps: int = 200
    batch_size: int = 4
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup: int = 200
    grad_accum: int = 1
    grad_clip: float = 1.0
    l1: float = 0.0
    seed: int = 0
    progress: bool = True


def _schedule(warmup: int, steps: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return factor


def train_shine(
    hypernet: ShineHypernet,
    backbone: nn.Module,
    tokenizer: Any,
    examples: Sequence[ShineExample],
    config: TrainConfig,
    description: str = "SHINE",
) -> list[float]:
    """Train the hypernet on `examples` (pretraining or QA tuning); returns the loss per step.

    The backbone is frozen; examples are drawn in shuffled epochs from a seeded generator.
    """
    if not examples:
        raise ValueError("no training examples")
    freeze(backbone)
    backbone.eval()
    hypernet.train()
    rng = random.Random(config.seed)
    optimizer = torch.optim.AdamW(
        hypernet.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(config.warmup, config.steps))
    order: list[int] = []
    losses: list[float] = []
    with step_bar(config.steps, description, enabled=config.progress) as advance:
        for _ in range(config.steps):
            total = 0.0
            for _ in range(config.grad_accum):
                picked = []
                for _ in range(config.batch_size):
                    if not order:
                        order = list(range(len(examples)))
                        rng.shuffle(order)
                    picked.append(examples[order.pop()])
                batch = encode(tokenizer, picked, hypernet.config.max_context_tokens)
                loss = shine_loss(hypernet, backbone, batch, config.l1) / config.grad_accum
                loss.backward()
                total += loss.item()
            nn.utils.clip_grad_norm_(hypernet.parameters(), config.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(total)
            advance(loss=total)
    hypernet.eval()
    return losses


@torch.no_grad()
def answer_logprob(
    hypernet: ShineHypernet | None,
    backbone: nn.Module,
    tokenizer: Any,
    example: ShineExample,
) -> float:
    """Summed log-probability of the example's target after its prompt, with the adapter
    generated from its context (`hypernet=None`: no adapter)."""
    prompt = prompt_ids(tokenizer, example.prompt)
    target = target_ids(tokenizer, example.target)
    adapters = None
    if hypernet is not None:
        context = text_ids(tokenizer, example.context, hypernet.config.max_context_tokens)
        adapters, _ = hypernet(backbone, [context])
    return float(target_logprobs(backbone, adapters, [prompt], [target])[0].sum())


# --- save / load --------------------------------------------------------------------------


def save_hypernet(hypernet: ShineHypernet, out: Path) -> Path:
    """Write `shine_config.json` and `hypernet.safetensors` to `out`."""
    meta = {
        "config": asdict(hypernet.config),
        "layout": hypernet.layout.to_dict(),
        "hidden": hypernet.hidden,
        "num_memory": hypernet.num_memory,
    }
    return save_module(hypernet, meta, out, CONFIG_FILE, WEIGHTS_FILE)


def load_hypernet(folder: Path, backbone: nn.Module) -> ShineHypernet:
    """The hypernet saved in `folder`, checked against `backbone`'s layout (ValueError, one
    line, when the folder is incomplete or was trained for another backbone)."""
    from safetensors.torch import load_file

    config_file, weights = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    if not config_file.is_file() or not weights.is_file():
        raise ValueError(f"shine: no trained hypernet in {folder} ({CONFIG_FILE}, {WEIGHTS_FILE})")
    try:
        meta = json.loads(config_file.read_text())
        config = ShineConfig.from_dict(meta["config"])
        saved = LoraLayout.from_dict(meta["layout"])
    except (ValueError, KeyError, TypeError) as ex:
        raise ValueError(f"shine: unreadable {config_file}: {ex}") from None
    expected = layout_for(backbone, config.rank, config.targets)
    if saved != expected:
        raise ValueError(
            f"shine: the hypernet in {folder} was trained for another backbone layout "
            f"({saved.num_layers} layers, {saved.numel_per_layer} LoRA values per layer; this "
            f"model: {expected.num_layers}, {expected.numel_per_layer})"
        )
    hypernet = ShineHypernet(config, saved, int(meta["hidden"]))
    hypernet.load_state_dict(load_file(str(weights)))
    device = next(backbone.parameters()).device
    return hypernet.to(device).eval()


# --- docket/local plugin ------------------------------------------------------------------


def read_contexts(path: str) -> dict[str, str]:
    """Contexts by id: a JSONL file of `{"id", "text"}` rows, or any other text file as one
    context (id ""). One clear ValueError naming the file and row for bad input."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"shine: -M context={path}: no such file")
    text = file.read_text(encoding="utf-8")
    if file.suffix != ".jsonl":
        if not text.strip():
            raise ValueError(f"shine: -M context={path} is empty")
        return {"": text.strip()}
    contexts: dict[str, str] = {}

    def bad(number: int, _: Exception) -> ValueError:
        return ValueError(
            f'shine: {path} line {number}: expected a JSON object with "id" and "text"'
        )

    for number, row in parse_lines(text.splitlines(), bad):
        try:
            contexts[str(row["id"])] = str(row["text"])
        except (KeyError, TypeError) as ex:
            raise bad(number, ex) from None
    if not contexts:
        raise ValueError(f"shine: -M context={path} holds no contexts")
    return contexts


@dataclass
class ContextAdapters:
    """Generates and caches one adapter per context for a backbone."""

    hypernet: ShineHypernet
    backbone: nn.Module
    tokenizer: Any
    contexts: dict[str, str]
    marker: re.Pattern[str]
    cache: dict[str, Adapters] = field(default_factory=dict)

    def context_id(self, prompt: str) -> str:
        """The id of the context a prompt asks about (the only one when there is one)."""
        if len(self.contexts) == 1:
            return next(iter(self.contexts))
        found = self.marker.search(prompt)
        if found is None:
            raise ValueError(
                f"shine: the prompt names no context (pattern {self.marker.pattern!r}) and "
                f"{len(self.contexts)} contexts were given"
            )
        key = found.group("id")
        if key not in self.contexts:
            raise ValueError(f"shine: the prompt names context {key!r}, which the file lacks")
        return key

    @torch.no_grad()
    def adapters(self, key: str) -> tuple[Adapters, bool]:
        """The adapter of context `key` and whether it came from the cache."""
        if key in self.cache:
            return self.cache[key], True
        limit = self.hypernet.config.max_context_tokens
        ids = text_ids(self.tokenizer, self.contexts[key], limit)
        generated, _ = self.hypernet(self.backbone, [ids])
        self.cache[key] = generated
        return generated, False


@dataclass(frozen=True)
class ShineKnobs:
    """The knobs of `-M method=shine`."""

    context: str | None = knob(None, "the context file: text (one context) or JSONL {id, text}")
    hypernet: str | None = knob(None, "the trained hypernetwork folder (default: <model>/shine)")
    context_marker: str | None = knob(
        None, "regex with a group (?P<id>...) naming the prompt's context"
    )


@method_plugin(
    "shine", ShineKnobs, "SHINE: the context becomes a generated LoRA adapter (one pass)"
)
def _build(loaded: Any, knobs: ShineKnobs) -> Any:
    if not knobs.context:
        raise ValueError("docket/local -M method=shine needs -M context=FILE (text or JSONL)")
    model = loaded.model
    folder = knobs.hypernet or str(Path(str(model.name_or_path)) / "shine")
    try:
        marker = re.compile(str(knobs.context_marker or DEFAULT_MARKER))
    except re.error as ex:
        raise ValueError(f"shine: -M context_marker is not a regex ({ex})") from None
    if "id" not in marker.groupindex:
        raise ValueError("shine: -M context_marker needs a named group (?P<id>...)")
    contexts = ContextAdapters(
        hypernet=load_hypernet(Path(folder), model),
        backbone=model,
        tokenizer=loaded.tokenizer,
        contexts=read_contexts(knobs.context),
        marker=marker,
    )

    def decode(model: Any, tokenizer: Any, prompt: list[int], params: Any, n: int) -> list[Any]:
        key = contexts.context_id(tokenizer.decode(prompt))
        started = time.perf_counter()
        adapters, cached = contexts.adapters(key)
        seconds = time.perf_counter() - started
        generations = decode_under(
            functional_lora(model, adapters), model, tokenizer, prompt, params, n
        )
        counters = {
            "context_id": key,
            "adapter_cached": cached,
            "adapter_seconds": round(seconds, 6),
            "lora_parameters": contexts.hypernet.layout.numel,
        }
        return with_counters(generations, counters)

    return decode
