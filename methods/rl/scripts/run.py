"""`python methods/rl/scripts/run.py --variant grpo|replay|nsr|stratified|echo|hir ...`

Trains one variant on a verifiable-reward task family and saves a checkpoint that
`inspect eval docket/rl_arith -T style=bare --model docket/local/OUT/model` (or
`docket/rl_constraints`) scores. Without `--init` or `--model-id` the policy is a tiny
character-level Llama warm-started by a short SFT on noisy demonstrations (cached per task,
seed and SFT settings under `--sft-cache`, so every variant of a seed starts from the same
weights).

Writes under `--out`: `metrics.jsonl` (one record per update: reward, loss, clip and rescue
fractions, cumulative generation calls / rollouts / tokens, periodic greedy accuracy on the
shipped test split), `summary.json`, `config.json` and `model/`.

A real model on a GPU: `--model-id Qwen/Qwen2.5-0.5B-Instruct --device cuda --lr 1e-6`
(see methods/rl/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from docket.methods.rl.configs import (
    VARIANTS,
    EchoConfig,
    GRPOConfig,
    check_settings,
    config_class,
)
from docket.methods.rl.echo.branching import TreeConfig

DEFAULT_SFT = {"arith": 1000, "constraints": 600}


def _coerce(value: str, like: Any) -> Any:
    if value.lower() == "none":
        return None
    if isinstance(like, bool):
        if value.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"expected true/false, got {value!r}")
        return value.lower() in ("true", "1")
    if like is None:
        return int(value)
    return type(like)(value)


def overrides(items: list[str], base: Any) -> dict[str, Any]:
    """`key=value` pairs for the dataclass `base`, typed like its fields (one clear error).

    Args:
        items: The `KEY=VALUE` strings of `--set` or `--tree`.
        base: The dataclass instance whose fields (and their types) the keys name.

    Returns:
        The typed values by field name, for `dataclasses.replace(base, **...)`.

    Raises:
        ValueError: A key is not a field of `base`, or a value does not parse as its type.
    """
    known = {f.name: getattr(base, f.name) for f in fields(base)}
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in known:
            raise ValueError(f"unknown setting {item!r}; accepted: {', '.join(sorted(known))}")
        try:
            out[key] = _coerce(value, known[key])
        except ValueError as error:
            raise ValueError(f"setting {key}: {error}") from None
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The runner's command line.

    Args:
        argv: The arguments without the program name (`None`: `sys.argv[1:]`).

    Returns:
        The parsed options.
    """
    parser = argparse.ArgumentParser(prog="python methods/rl/scripts/run.py", description=__doc__)
    parser.add_argument("--variant", required=True, choices=VARIANTS)
    parser.add_argument(
        "--task", choices=("arith", "constraints"), help="default: arith (hir: constraints)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=GRPOConfig.steps)
    parser.add_argument("--lr", type=float, default=GRPOConfig.lr)
    parser.add_argument("--out", type=Path, required=True, help="run folder")
    parser.add_argument("--init", type=Path, help="start from this checkpoint (no warm start)")
    parser.add_argument("--model-id", help="a real causal LM (local folder or Hub id)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sft-steps", type=int, help="warm-start SFT steps (default per task)")
    parser.add_argument("--sft-noise", type=float, default=0.3)
    parser.add_argument("--sft-cache", type=Path, default=Path("runs/rl/sft"))
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="the variant's config"
    )
    parser.add_argument(
        "--tree", nargs="*", default=[], metavar="KEY=VALUE", help="TreeConfig (echo)"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    parser.add_argument("--no-progress", action="store_true")
    return parser.parse_args(argv)


def config_from(args: argparse.Namespace) -> GRPOConfig:
    """The validated configuration of the variant (`configs.py`), `--set` and `--tree` applied.

    Args:
        args: The parsed command line.

    Returns:
        The run's configuration.

    Raises:
        ValueError: An unknown or malformed setting, a setting of another variant, `--tree`
            without echo, or a configuration `validate` rejects.
    """
    check_settings(args.variant, [item.partition("=")[0] for item in args.set if "=" in item])
    task = {} if args.task is None else {"task": args.task}
    base = config_class(args.variant)(seed=args.seed, steps=args.steps, lr=args.lr, **task)
    cfg = replace(base, **overrides(args.set, base))
    if args.tree:
        if not isinstance(cfg, EchoConfig):
            raise ValueError(f"--tree sets ECHO's tree; variant {args.variant} has none")
        cfg = replace(cfg, tree=replace(cfg.tree, **overrides(args.tree, TreeConfig())))
    cfg.validate()
    return cfg


def initial_policy(args: argparse.Namespace, cfg: GRPOConfig) -> Any:
    """The starting policy: --init, --model-id, or the cached warm-started tiny model.

    Args:
        args: The parsed command line.
        cfg: The run's configuration (task and seed of the warm start).

    Returns:
        An `HFPolicy` on `args.device`.
    """
    from docket.core.tiny_models import alphabet_tokenizer, tiny_llama
    from docket.methods.rl.policy import HFPolicy
    from docket.methods.rl.sft import WarmStart, warm_start
    from docket.methods.rl.tasks import family
    from docket.methods.rl.tiny import load_checkpoint, save_checkpoint

    if args.init or args.model_id:
        model, tokenizer = load_checkpoint(args.init or args.model_id, args.device)
        return HFPolicy(model, tokenizer)
    task = family(cfg.task)
    steps = args.sft_steps if args.sft_steps is not None else DEFAULT_SFT[cfg.task]
    cached = args.sft_cache / f"{cfg.task}-seed{cfg.seed}-sft{steps}-noise{args.sft_noise}"
    if (cached / "config.json").is_file():
        model, tokenizer = load_checkpoint(cached, args.device)
        return HFPolicy(model, tokenizer)
    tokenizer = alphabet_tokenizer(task.alphabet)
    policy = HFPolicy(tiny_llama(tokenizer, seed=cfg.seed).to(args.device), tokenizer)
    losses = warm_start(policy, task, WarmStart(steps=steps, noise=args.sft_noise, seed=cfg.seed))
    save_checkpoint(policy.model, tokenizer, cached)
    (cached / "sft.json").write_text(json.dumps({"steps": steps, "last_loss": losses[-1]}))
    return policy


def main(argv: list[str] | None = None) -> int:
    """Train one variant and write its metrics, summary, configuration and checkpoint.

    Args:
        argv: The arguments without the program name (`None`: `sys.argv[1:]`).

    Returns:
        The exit status: 0, or 2 for an invalid setting.
    """
    args = parse(argv)
    try:
        cfg = config_from(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import torch

    from docket.methods.rl.metrics import MetricsLog
    from docket.methods.rl.tasks import family
    from docket.methods.rl.tiny import save_checkpoint
    from docket.methods.rl.trainer import trainer_for

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(cfg.seed)
    policy = initial_policy(args, cfg)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(cfg.as_dict(), indent=2))
    metrics = args.out / "metrics.jsonl"
    metrics.unlink(missing_ok=True)
    log = MetricsLog(metrics)
    try:
        summary = trainer_for(policy, family(cfg.task), cfg).run(log, progress=not args.no_progress)
    finally:
        log.close()
    save_checkpoint(policy.model, policy.tokenizer, args.out / "model")
    summary["checkpoint"] = str(args.out / "model")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: v for k, v in summary.items() if k != "evals"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
