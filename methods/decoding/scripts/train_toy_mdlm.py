"""Train the toy masked-diffusion LM on the copy / reverse / sort corpus (CPU, minutes).

    python methods/decoding/scripts/train_toy_mdlm.py --out runs/toy-mdlm [--steps 3000]

Writes a checkpoint directory that `docket/local/DIR -M method=dsb` loads, plus
`train_log.json` (`docket.methods.decoding.dsb.toy_mdlm.train.train`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from docket.methods.decoding.dsb.toy_mdlm.train import TrainConfig, train


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="methods/decoding/scripts/train_toy_mdlm.py")
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
