"""Train the toy masked-diffusion LM on the copy / reverse / sort corpus (CPU, minutes).

    python methods/decoding/scripts/train_toy_mdlm.py --out runs/toy-mdlm [--steps 3000]

`train` writes a checkpoint directory that `docket/local/DIR -M method=dsb` loads, plus
`train_log.json` (config, parameter count, training seconds, loss curve); held-out exact match
under each schedule comes from `methods/decoding/scripts/evaluate_toy_mdlm.py DIR`.
`trained_checkpoint()` returns the checkpoint of a configuration: the one shipped with docket
(`checkpoints/<checkpoint_key>/`, sha256-checked) when there is one, else the one trained once
into docket's cache (`~/.cache/docket/toy_mdlm`, moved with `DOCKET_CACHE`), for the benchmarks
and the evaluation script.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import checkpoint, data


@dataclass(frozen=True)
class TrainConfig:
    """Model size and optimisation of the shipped toy model."""

    steps: int = 4000
    batch: int = 32
    lr: float = 2e-3
    warmup: int = 100
    weight_decay: float = 0.01
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    mlp: int = 256
    max_len: int = 16
    #: Extra EOS padding after each answer, up to this many tokens (the model learns to end).
    pad_extra: int = 12
    seed: int = 0
    #: Few-shot preambles: a batch gets, with probability `preamble_rate`, 1 to this many
    #: random solved examples before each question (0: never). The model then counts
    #: absolute positions from the question's turn (`ToyConfig.turn_separator_id`).
    preamble_shots: int = 0
    preamble_rate: float = 0.5
    #: Preambles start at this step: the tasks are learned first (from scratch, with
    #: preambles in half the batches, copying was not learned in 4000 steps).
    preamble_from: int = 0
    #: Loss is averaged and logged every this many steps.
    log_every: int = 100
    threads: int = 0


#: The shipped long-prompt configuration: preambles of 1-12 solved examples in half the
#: batches after step 2000 (`--steps 6000 --preamble-shots 12 --preamble-from 2000`); 12
#: shots of the fixed preamble (about 400 tokens) and a 48-token answer fit the model's 512
#: positions.
PREAMBLE_CONFIG = TrainConfig(steps=6000, preamble_shots=12, preamble_from=2000)


def encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass(frozen=True)
class Batch:
    """Rows [preamble | question | answer | EOS...] of one length, with each row's answer
    start and question-turn start."""

    ids: list[list[int]]
    answer_starts: list[int]
    turn_starts: list[int]


def make_batch(
    tokenizer: Any, rng: random.Random, config: TrainConfig, eos_id: int, preambles: bool = True
) -> Batch:
    """One training batch (when `preambles`, with few-shot preambles in a `preamble_rate`
    share of batches)."""
    with_preamble = preambles and config.preamble_shots > 0 and rng.random() < config.preamble_rate
    rows: list[tuple[list[int], list[int], int]] = []
    for _ in range(config.batch):
        example = data.sample_example(rng, max_len=config.max_len)
        shots = rng.randint(1, config.preamble_shots) if with_preamble else 0
        before = encode(tokenizer, data.solved_turns(rng, shots, config.max_len)) if shots else []
        prompt = before + encode(tokenizer, data.render_prompt(example.question))
        rows.append((prompt, encode(tokenizer, example.answer) + [eos_id], len(before)))
    longest = max(len(p) + len(a) for p, a, _ in rows) + rng.randint(0, config.pad_extra)
    ids = [p + a + [eos_id] * (longest - len(p) - len(a)) for p, a, _ in rows]
    return Batch(ids, [len(p) for p, _, _ in rows], [t for _, _, t in rows])


#: Fields added after the first cached checkpoints: named in the cache key only when they
#: differ from their defaults, so earlier checkpoints keep their directory.
_LATER_FIELDS = ("preamble_shots", "preamble_rate", "preamble_from")


def train(
    out: str | Path,
    config: TrainConfig = TrainConfig(),
    log: Callable[[str], None] = print,
) -> Path:
    """Train, save the checkpoint to `out` and return it."""
    import torch

    from .model import ToyConfig, ToyMaskPredictor, init_weights, masked_diffusion_loss

    if config.threads:
        torch.set_num_threads(config.threads)
    tokenizer: Any = data.build_tokenizer()
    eos_id = int(tokenizer.convert_tokens_to_ids(data.EOS))
    mask_id = int(tokenizer.convert_tokens_to_ids(data.MASK))
    model_config = ToyConfig(
        vocab_size=len(tokenizer),
        mask_token_id=mask_id,
        eos_token_id=eos_id,
        hidden=config.hidden,
        layers=config.layers,
        heads=config.heads,
        mlp=config.mlp,
        turn_separator_id=turn_separator(tokenizer) if config.preamble_shots else None,
    )
    torch.manual_seed(config.seed)
    model = ToyMaskPredictor(model_config)
    init_weights(model, config.seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay, betas=(0.9, 0.98)
    )

    def rate(step: int) -> float:
        if step < config.warmup:
            return (step + 1) / config.warmup
        progress = (step - config.warmup) / max(1, config.steps - config.warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    rng = random.Random(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    losses: list[tuple[int, float]] = []
    started = time.perf_counter()
    model.train()
    running = 0.0
    for step in range(config.steps):
        batch = make_batch(tokenizer, rng, config, eos_id, step >= config.preamble_from)
        loss = masked_diffusion_loss(
            model,
            torch.tensor(batch.ids),
            torch.tensor(batch.answer_starts),
            generator=generator,
            turn_start=torch.tensor(batch.turn_starts),
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        running += loss.item()
        if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
            count = (step % config.log_every) + 1
            losses.append((step + 1, running / count))
            log(f"step {step + 1}/{config.steps} loss {running / count:.4f}")
            running = 0.0
    model.eval()
    seconds = time.perf_counter() - started
    folder = checkpoint.save(model, tokenizer, out)
    record = {
        "train_config": asdict(config),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(seconds, 1),
        "losses": losses,
    }
    (folder / "train_log.json").write_text(json.dumps(record, indent=2) + "\n")
    checkpoint.write_sums(folder)
    return folder


def turn_separator(tokenizer: Any) -> int:
    """The token id that ends a turn of the toy chat template (its newline)."""
    (newline,) = encode(tokenizer, "\n")
    return newline


#: Checkpoints `train` made with the configuration their directory is named after
#: (`checkpoint_key`), shipped with docket so that nothing needs training on first use.
SHIPPED_ROOT = Path(__file__).parent / "checkpoints"


def cache_root() -> Path:
    """Where checkpoints of configurations that are not shipped are trained to and reused."""
    return Path(os.environ.get("DOCKET_CACHE", Path.home() / ".cache" / "docket")) / "toy_mdlm"


def checkpoint_key(config: TrainConfig) -> str:
    """The cache directory name of `config` (every field that changes the trained weights)."""
    defaults = asdict(TrainConfig())
    return "-".join(
        f"{k}{v}"
        for k, v in asdict(config).items()
        if k not in ("threads", "log_every") and not (k in _LATER_FIELDS and v == defaults[k])
    )


def shipped_checkpoint(config: TrainConfig) -> Path | None:
    """The checkpoint shipped with docket for `config`, verified, or None when none is.

    Args:
        config: The training configuration (`threads` and `log_every` do not matter).

    Returns:
        Its directory under `SHIPPED_ROOT`, or None.

    Raises:
        checkpoint.ChecksumMismatch: A shipped file is missing or corrupt, or the directory's
            `train_log.json` records another configuration than its name.
    """
    key = checkpoint_key(config)
    folder = SHIPPED_ROOT / key
    if not folder.is_dir():
        return None
    checkpoint.verify_sums(folder, required=True)
    recorded = json.loads((folder / "train_log.json").read_text())["train_config"]
    if checkpoint_key(TrainConfig(**recorded)) != key:
        raise checkpoint.ChecksumMismatch(f"{folder}: train_log.json records another config")
    return folder


def available_checkpoint(config: TrainConfig) -> Path | None:
    """The shipped or already trained checkpoint of `config`, without training one.

    Args:
        config: The training configuration.

    Returns:
        The shipped directory, else the cache's, else None.
    """
    shipped = shipped_checkpoint(config)
    if shipped is not None:
        return shipped
    cached = cache_root() / checkpoint_key(config)
    return cached if (cached / "model.safetensors").is_file() else None


def trained_checkpoint(
    config: TrainConfig = TrainConfig(), log: Callable[[str], None] = print
) -> Path:
    """The toy checkpoint for `config`: the shipped one, else trained into the cache once.

    Args:
        config: The training configuration.
        log: Where training prints its loss lines (only when it trains).

    Returns:
        The checkpoint directory.
    """
    found = available_checkpoint(config)
    if found is not None:
        return found
    target = cache_root() / checkpoint_key(config)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        train(staging, config, log)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
