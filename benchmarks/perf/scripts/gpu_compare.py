"""The `make bench` comparisons of DSB, Dustin and FLASH on real checkpoints (a CUDA GPU).

    python benchmarks/perf/scripts/gpu_compare.py dsb --model /models/LLaDA-8B-Instruct \\
        --trust-remote-code --prompts gsm8k.jsonl [--limit 50]
    python benchmarks/perf/scripts/gpu_compare.py dustin --model /models/Qwen2.5-7B-Instruct \\
        [--draft /models/Qwen2.5-0.5B-Instruct | --draft-layers 8] --contexts 4096 16384 32768
    python benchmarks/perf/scripts/gpu_compare.py flash --model /models/llava-1.5-7b-hf \\
        --image page.png [--new-tokens 64]

Each prints JSON lines (one per setting) and nothing is downloaded: checkpoints are local
directories. `--prompts` is JSON lines with `question` (and optionally `answer`, compared with
the last number of the output, GSM8K style). `--device cpu` runs the same code on a CPU (the
tests do, on tiny models).

- dsb: naive blocks, DSB (const), DSB (greedy) without cache; naive + dual cache and DSB +
  DSB Cache; accuracy, mean NFE and seconds per answer (LLaDA defaults: 256 tokens, block 32,
  τ 0.9, prefix window 24; `--dream` for Dream's prefix window 4).
- dustin: per-step verification time, sparse vs dense, at each `--contexts` length, and one
  end-to-end generation per mode on a long prompt (`--prompt-file`, else a synthetic one)
  with acceptance rate and attention bytes saved.
- flash: seconds per token of FLASH vs plain greedy decoding on one image (`--image`), and
  the selected visual heads.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(run: Callable[[], Any], device: str) -> tuple[float, Any]:
    """Seconds of `run()` (synchronised on CUDA) and its result."""
    _sync(device)
    started = time.perf_counter()
    result = run()
    _sync(device)
    return time.perf_counter() - started, result


def _emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def _last_number(text: str) -> str | None:
    found = re.findall(r"-?\d[\d,]*\.?\d*", text)
    return found[-1].replace(",", "").rstrip(".") if found else None


def compare_dsb(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Vanilla (LLaDA, one token per step) and threshold naive blocks, DSB (const, greedy)
    without cache, and the two caches, on the prompts."""
    from docket.core.jsonl import parse_lines
    from docket.methods.decoding.dsb.algorithm import DSBSettings, generate
    from docket.methods.decoding.dsb.plugin import load_masked_lm
    from docket.methods.local.loading import CheckpointSpec

    spec = CheckpointSpec(path=args.model, device=args.device, dtype=args.dtype)
    loaded = load_masked_lm(spec, args.trust_remote_code, args.mask_id)
    tokenizer = loaded.tokenizer
    lines = Path(args.prompts).read_text().splitlines()
    rows = [row for _, row in parse_lines(lines)]
    rows = rows[: args.limit]
    prefix = 4 if args.dream else 24
    variants: dict[str, dict[str, Any]] = {
        "vanilla": {"schedule": "naive", "threshold": None, "steps": args.gen_length},
        "naive": {"schedule": "naive"},
        "dsb_const": {"schedule": "dsb_const"},
        "dsb": {"schedule": "dsb"},
        "naive+dual_cache": {"schedule": "naive", "cache": "dsb", "prefix_window": 0},
        "dsb_const+dsb_cache": {"schedule": "dsb_const", "cache": "dsb", "prefix_window": prefix},
        "dsb+dsb_cache": {"schedule": "dsb", "cache": "dsb", "prefix_window": prefix},
    }
    results = []
    for name, variant in variants.items():
        if "cache" in variant and not loaded.model.supports_cache:
            _emit({"method": "dsb", "setting": name, "skipped": "no replace_position forward"})
            continue
        common = {
            "block_length": args.block_length,
            "threshold": args.threshold,
            "gen_length": args.gen_length,
        }
        settings = DSBSettings(**{**common, **variant})
        seconds, nfes, correct = [], [], 0
        for row in rows:
            messages = [{"role": "user", "content": row["question"]}]
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            prompt = list(tokenizer(text, add_special_tokens=False)["input_ids"])
            spent, result = timed(partial(generate, loaded.model, prompt, settings), args.device)
            answer = tokenizer.decode(result.tokens, skip_special_tokens=True)
            correct += "answer" in row and _last_number(answer) == _last_number(str(row["answer"]))
            seconds.append(spent)
            nfes.append(result.trace.nfe)
        out = {
            "method": "dsb",
            "setting": name,
            "prompts": len(rows),
            "accuracy": correct / len(rows) if rows and "answer" in rows[0] else None,
            "mean_nfe": statistics.mean(nfes),
            "seconds_per_answer": statistics.mean(seconds),
            "tokens_per_second": args.gen_length / statistics.mean(seconds),
        }
        _emit(out)
        results.append(out)
    return results


def _load_causal(path: str, device: str, dtype: str) -> Any:
    """A checkpoint directory, or a `.gguf` file (dequantised by transformers)."""
    from docket.methods.local.loading import CheckpointSpec, load

    if path.endswith(".gguf"):
        file = Path(path)
        spec = CheckpointSpec(
            path=str(file.parent), gguf_file=file.name, device=device, dtype=dtype
        )
        return load(spec)
    return load(CheckpointSpec(path=path, device=device, dtype=dtype))


def compare_dustin(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Verification step time per context, then one generation per verification mode."""
    from docket.benchmarks.perf.dustin_timing import verification_step_pair
    from docket.methods.decoding.dustin.algorithm import (
        DustinDecoder,
        DustinSettings,
        make_self_draft,
    )
    from docket.methods.local.sampling import DecodeParams, eos_token_ids

    loaded = _load_causal(args.model, args.device, args.dtype)
    target, tokenizer = loaded.model, loaded.tokenizer
    base = DustinSettings(
        draft_tokens=args.draft_tokens, budget=args.budget, recent=args.recent, refresh=4
    )
    results = []
    for context in args.contexts:
        sparse, dense, reads = verification_step_pair(target, context, base)
        sparse(), dense()
        sparse_s = statistics.median(timed(sparse, args.device)[0] for _ in range(3))
        dense_s = statistics.median(timed(dense, args.device)[0] for _ in range(3))
        out = {
            "method": "dustin",
            "context": context,
            "reads": reads,
            "sparse_step_s": sparse_s / base.refresh,
            "dense_step_s": dense_s / base.refresh,
            "ratio": sparse_s / dense_s,
        }
        _emit(out)
        results.append(out)
    draft = (
        _load_causal(args.draft, args.device, args.dtype).model
        if args.draft
        else make_self_draft(target, args.draft_layers)
    )
    if args.prompt_file:
        text = Path(args.prompt_file).read_text()
    else:
        text = " ".join(
            f"Note {i}: the code word for day {i} is w{i * 7919 % 1000}." for i in range(4000)
        )
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])[: max(args.contexts)]
    question = list(
        tokenizer(" What is the code word for day 17?", add_special_tokens=False)["input_ids"]
    )
    params = DecodeParams(max_new_tokens=args.new_tokens)
    for verify in ("dense", "sparse"):
        decoder = DustinDecoder(
            target, draft, DustinSettings(**{**base.__dict__, "verify": verify})
        )
        run = partial(
            decoder.generate,
            ids + question,
            params,
            eos_token_ids(target, tokenizer),
            tokenizer.decode,
        )
        spent, (generation, _) = timed(run, args.device)
        out = {
            "method": "dustin",
            "verify": verify,
            "context": len(ids) + len(question),
            "seconds": spent,
            "tokens_per_second": len(generation.token_ids) / spent,
            **generation.metadata,
        }
        _emit(out)
        results.append(out)
    return results


def compare_flash(args: argparse.Namespace) -> list[dict[str, Any]]:
    """FLASH vs plain greedy decoding on one image."""
    from docket.methods.decoding.flash.algorithm import FlashSettings, generate, install
    from docket.methods.local.sampling import DecodeParams, greedy
    from docket.methods.local.vision import open_image

    loaded = _load_causal(args.model, args.device, args.dtype)
    if not loaded.reads_images:
        raise SystemExit(f"{args.model} is not an image-text-to-text checkpoint")
    processor = loaded.processor
    messages = [
        {
            "role": "user",
            "content": [{"type": "image"}, {"type": "text", "text": args.question}],
        }
    ]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    batch = processor(text=[text], images=[open_image(args.image)], return_tensors="pt")
    ids = list(batch["input_ids"][0].tolist())
    inputs = {k: v for k, v in batch.items() if k not in ("input_ids", "attention_mask")}
    params = DecodeParams(max_new_tokens=args.new_tokens, prompt_inputs=inputs)
    model, tokenizer = loaded.model, loaded.tokenizer
    plain_s, plain = timed(lambda: greedy(model, tokenizer, ids, params)[0], args.device)
    original = install(model)
    settings = FlashSettings(heads=args.heads, strength=args.strength)
    flash_s, (shaped, _) = timed(
        lambda: generate(model, tokenizer, ids, params, settings, original), args.device
    )
    rows = [
        {
            "method": "flash",
            "setting": "plain",
            "seconds_per_token": plain_s / len(plain.token_ids),
            "text": plain.text,
        },
        {
            "method": "flash",
            "setting": "flash",
            "seconds_per_token": flash_s / len(shaped[0].token_ids),
            "ratio": (flash_s / len(shaped[0].token_ids)) / (plain_s / len(plain.token_ids)),
            "text": shaped[0].text,
            **shaped[0].metadata,
        },
    ]
    for row in rows:
        _emit(row)
    return rows


def parser() -> argparse.ArgumentParser:
    """The command line (one subcommand per method)."""
    main = argparse.ArgumentParser(prog="python benchmarks/perf/scripts/gpu_compare.py")
    main.add_argument("--device", default="cuda")
    main.add_argument("--dtype", default="bfloat16")
    methods = main.add_subparsers(dest="method", required=True)
    dsb = methods.add_parser("dsb", help="DSB / DSB Cache vs naive blocks / dual cache")
    dsb.add_argument("--model", required=True)
    dsb.add_argument("--prompts", required=True)
    dsb.add_argument("--limit", type=int, default=50)
    dsb.add_argument("--trust-remote-code", action="store_true")
    dsb.add_argument("--mask-id", type=int)
    dsb.add_argument("--dream", action="store_true")
    dsb.add_argument("--block-length", type=int, default=32)
    dsb.add_argument("--threshold", type=float, default=0.9)
    dsb.add_argument("--gen-length", type=int, default=256)
    dustin = methods.add_parser("dustin", help="sparse vs dense verification")
    dustin.add_argument("--model", required=True)
    dustin.add_argument("--draft")
    dustin.add_argument("--draft-layers", type=int, default=8)
    dustin.add_argument("--draft-tokens", type=int, default=4)
    dustin.add_argument("--budget", type=int, default=2048)
    dustin.add_argument("--recent", type=int, default=256)
    dustin.add_argument("--contexts", type=int, nargs="+", default=[4096, 16384, 32768])
    dustin.add_argument("--prompt-file")
    dustin.add_argument("--new-tokens", type=int, default=64)
    flash = methods.add_parser("flash", help="FLASH vs plain decoding")
    flash.add_argument("--model", required=True)
    flash.add_argument("--image", required=True)
    flash.add_argument("--question", default="Describe the image in detail.")
    flash.add_argument("--heads", type=int, default=16)
    flash.add_argument("--strength", type=float, default=1.0)
    flash.add_argument("--new-tokens", type=int, default=64)
    return main


def main(argv: list[str] | None = None) -> int:
    """Run one method's comparison and print its JSON lines.

    Args:
        argv: The arguments without the program name (`None`: `sys.argv[1:]`).

    Returns:
        The exit status: 0.
    """
    args = parser().parse_args(argv)
    {"dsb": compare_dsb, "dustin": compare_dustin, "flash": compare_flash}[args.method](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
