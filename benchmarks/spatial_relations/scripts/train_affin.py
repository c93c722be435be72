"""Train a tiny VLM on `docket/spatial_relations` scenes with and without AffIn-Space.

    python benchmarks/spatial_relations/scripts/train_affin.py --out runs/spatial --seed 0
    inspect eval docket/spatial_relations --model docket/local/runs/spatial/affin -M method=affin
    inspect eval docket/spatial_relations --model docket/local/runs/spatial/base

Both variants start from the same random tiny LLaVA (`docket/core/tiny_models.py`: 64 px, 8 px
patches, a 1-layer CLIP tower, a 2-layer Llama) and see the same scenes (other seeds than the
shipped set) for the same number of steps; the AffIn-Space variant also learns its pose head from
the renderer's poses. `OUT/metrics.json` holds the losses and the in-process accuracy on the
shipped set (the option whose first token is more likely: yes or no).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from docket.benchmarks.spatial_relations.dataset import QUESTION, RELATIONS, generate, load
from docket.benchmarks.spatial_relations.render import COLOURS, draw

TRAIN_SEED_OFFSET = 5000


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenes", type=int, default=4000, help="training scenes")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--max-angle", type=float, default=3.14159, help="view rotation range")
    parser.add_argument("--pose-rank", type=int, default=4)
    parser.add_argument("--variants", default="base,affin")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from docket.core.tiny_models import build_tiny_vlm
    from docket.methods.spatial.affin import AffinConfig, AffinSpace, save_affin
    from docket.methods.spatial.train import VisualExample, choose, train_vlm

    torch.set_num_threads(args.threads)
    scenes = generate(args.scenes, TRAIN_SEED_OFFSET + args.seed, max_angle=args.max_angle)
    train = [
        VisualExample(draw(list(s.objects), s.pose), s.question, s.answer, tuple(s.pose.as_list()))
        for s in scenes
    ]
    rows = load()
    shipped = []
    for row in rows:
        with Image.open(row.image) as image:
            shipped.append(
                VisualExample(image.convert("RGB"), row.question, row.answer, tuple(row.pose))
            )
    corpus = [
        QUESTION.format(a=a, relation=r, b=b) for a in COLOURS for b in COLOURS for r in RELATIONS
    ] * 5 + ["yes", "no"] * 20
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    for variant in args.variants.split(","):
        folder = args.out / variant
        build_tiny_vlm(folder, corpus, image_size=64, patch_size=8, hidden=64, seed=args.seed)
        model = AutoModelForImageTextToText.from_pretrained(folder)
        processor = AutoProcessor.from_pretrained(folder)
        torch.manual_seed(args.seed)
        affin = (
            AffinSpace.for_model(model, AffinConfig(pose_rank=args.pose_rank))
            if variant == "affin"
            else None
        )
        history = train_vlm(
            model,
            processor,
            train,
            affin=affin,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            seed=args.seed,
            progress=not args.no_progress,
            description=f"{variant} VLM",
        )
        picked = choose(model, processor, shipped, ("yes", "no"), affin)
        accuracy = statistics.fmean(p == e.target for p, e in zip(picked, shipped, strict=True))
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
        if affin is not None:
            save_affin(affin, folder / "affin")
        last = history[-50:]
        report[variant] = {
            "accuracy": accuracy,
            **{f"loss_{k}": statistics.fmean(h[k] for h in last) for k in last[0]},
        }
        print(variant, json.dumps(report[variant]))
    (args.out / "metrics.json").write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
