"""Train the toy masked-diffusion LM on the copy / reverse / sort corpus (CPU, minutes).

    python -m docket.methods.decoding.toy_mdlm.train --out runs/toy-mdlm [--steps 3000]

Writes a checkpoint directory that `docket/local/DIR -M method=dsb` loads, plus
`train_log.json` (config, parameter count, training seconds, loss curve); held-out exact match
under each schedule comes from `python -m docket.methods.decoding.toy_mdlm.evaluate DIR`.
`trained_checkpoint()` trains once into docket's cache (`~/.cache/docket/toy_mdlm`, moved with
`DOCKET_CACHE`) and reuses it, for benchmarks and README numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
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
    #: Loss is averaged and logged every this many steps.
    log_every: int = 100
    threads: int = 0


def encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def make_batch(
    tokenizer: Any, rng: random.Random, config: TrainConfig, eos_id: int
) -> tuple[list[list[int]], list[int]]:
    """Rows [prompt | answer | EOS...] of one length, and each row's answer start."""
    rows: list[tuple[list[int], list[int]]] = []
    for _ in range(config.batch):
        example = data.sample_example(rng, max_len=config.max_len)
        prompt = encode(tokenizer, data.render_prompt(example.question))
        rows.append((prompt, encode(tokenizer, example.answer) + [eos_id]))
    longest = max(len(p) + len(a) for p, a in rows) + rng.randint(0, config.pad_extra)
    ids = [p + a + [eos_id] * (longest - len(p) - len(a)) for p, a in rows]
    return ids, [len(p) for p, _ in rows]


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
        rows, starts = make_batch(tokenizer, rng, config, eos_id)
        loss = masked_diffusion_loss(
            model, torch.tensor(rows), torch.tensor(starts), generator=generator
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
    return folder


def cache_root() -> Path:
    return Path(os.environ.get("DOCKET_CACHE", Path.home() / ".cache" / "docket")) / "toy_mdlm"


def trained_checkpoint(
    config: TrainConfig = TrainConfig(), log: Callable[[str], None] = print
) -> Path:
    """The toy checkpoint for `config`, trained into docket's cache on first use."""
    key = "-".join(
        f"{k}{v}" for k, v in asdict(config).items() if k not in ("threads", "log_every")
    )
    target = cache_root() / key
    if (target / "model.safetensors").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        train(staging, config, log)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docket.methods.decoding.toy_mdlm.train")
    parser.add_argument("--out", type=Path, required=True, help="checkpoint directory to write")
    defaults = TrainConfig()
    for name, value in asdict(defaults).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = parser.parse_args(argv)
    values = {k: getattr(args, k) for k in asdict(defaults)}
    folder = train(args.out, TrainConfig(**values))
    print(f"saved {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
