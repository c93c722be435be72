"""Held-out exact-match accuracy and decoding cost of a toy checkpoint under DSB settings.

    python methods/decoding/scripts/evaluate_toy_mdlm.py DIR [--size 100] [--block-length 4]
        [--preamble SHOTS]

prints one JSON line per schedule/cache setting (accuracy, mean NFE, mean seconds), scored by
`docket.methods.decoding.dsb.toy_mdlm.evaluate.score`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from docket.methods.decoding.dsb.toy_mdlm import data
from docket.methods.decoding.dsb.toy_mdlm.evaluate import VARIANTS, score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="methods/decoding/scripts/evaluate_toy_mdlm.py")
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--block-length", type=int, default=4)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument(
        "--steps", type=int, default=0, help="vanilla's steps (0: one token per step)"
    )
    parser.add_argument("--gen-length", type=int, default=24)
    parser.add_argument("--prefix-window", type=int, default=4)
    parser.add_argument("--only", nargs="*", choices=list(VARIANTS))
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument(
        "--preamble", type=int, default=0, help="solved examples before each question"
    )
    args = parser.parse_args(argv)
    import torch

    from docket.methods.decoding.dsb.toy_mdlm.checkpoint import load

    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = load(args.checkpoint)
    examples = data.eval_set(args.size, seed=args.seed)
    common: dict[str, Any] = {
        "block_length": args.block_length,
        "threshold": args.threshold,
        "steps": args.steps or args.gen_length,
        "prefix_window": args.prefix_window,
    }
    for name in args.only or list(VARIANTS):
        result = score(
            model,
            tokenizer,
            examples,
            name,
            gen_length=args.gen_length,
            preamble=data.preamble(args.preamble) if args.preamble else "",
            **{**common, **VARIANTS[name]},
        )
        print(json.dumps(result.row()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
