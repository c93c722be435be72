"""The SAR toy experiment on a CPU: which data source teaches a small student most?

1. **Initial student**: a tiny character-level Llama (`docket/core/tiny_models.py`) trained by
   TRL's `SFTTrainer` on style-A solutions of the `pretrain` problems, a share of them with a
   slip, so it writes style A and makes mistakes.
2. **Data** (`docket/toy_math_sar` through Inspect, the student served by `docket/local`, the
   teacher role bound to the scripted `toy_math_teacher`): K samples per `train` problem;
   `rs` = the verified ones; `sar` = rs plus the teacher's minimal repairs within the edit
   budget; `rewrite` = the teacher's style-B rewrites of every sample; `synth` = the teacher's
   own style-C solutions.
3. **Adaptation cost**: mean NLL per completion token of each source under the initial student.
4. **SFT**: the initial student fine-tuned on each source (`SFTTrainer`, same steps), several
   seeds; each checkpoint is scored by `docket/toy_math` on the `test` problems through
   `docket/local`.

    python benchmarks/toy_math/scripts/experiment.py --out runs/sar --seeds 3
prints a Markdown table of every source and writes `OUT/results.json`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from docket.benchmarks.toy_math.dataset import split_chains
from docket.benchmarks.toy_math.reference import style_a
from docket.methods.distill.style_refine import SFTSettings, adaptation_cost, sft

SOURCES = ("rs", "sar", "rewrite", "synth")


def initial_student(
    out: Path,
    problems: int,
    slip_rate: float,
    steps: int,
    seed: int,
    hidden: int,
    layers: int,
    lr: float = 2e-3,
) -> Path:
    """Train the initial student on noisy style-A solutions (cosine schedule, 5% warm-up);
    returns its checkpoint folder."""
    from docket.benchmarks.toy_math.reference import question
    from docket.core.tiny_models import ascii_tokenizer, tiny_causal_lm

    tokenizer = ascii_tokenizer(model_max_length=256)
    model = tiny_causal_lm(
        len(tokenizer), hidden=hidden, layers=layers, heads=4, context=256, seed=seed
    )
    base = out / "random-init"
    model.save_pretrained(str(base))
    tokenizer.save_pretrained(str(base))
    rng = random.Random(seed)
    examples = []
    for chain in split_chains("pretrain", problems):
        slip = None
        if rng.random() < slip_rate:
            slip = (rng.randrange(len(chain.steps)), rng.choice((-2, -1, 1, 2)))
        examples.append((question(chain), style_a(chain, slip)))
    student = out / "student0"
    settings = SFTSettings(steps=steps, batch=16, lr=lr, seed=seed, schedule="cosine", warmup=0.05)
    sft(base, examples, student, settings)
    return student


def _local(path: Path) -> Any:
    from inspect_ai.model import get_model

    return get_model("docket/local", path=str(path.resolve()), device="cpu")


def collect(student: Path, out: Path, problems: int, k: int, budget: float) -> dict[str, list[Any]]:
    """Run `docket/toy_math_sar`; (prompt, completion) pairs per source."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from docket.benchmarks.toy_math.toy_math import toy_math_sar

    [log] = inspect_eval(
        toy_math_sar(size=problems, k=k, budget=budget),
        model=_local(student),
        model_roles={"teacher": get_model("docket/scripted", policy="toy_math_teacher")},
        log_dir=str(out / "logs"),
        display="none",
    )
    sources: dict[str, list[Any]] = {s: [] for s in SOURCES}
    stats: dict[str, Any] = {"repairs_tried": 0, "repairs_accepted": 0}
    ratios: list[float] = []
    for sample in log.samples or []:
        score = (sample.scores or {})["sar_collection"]
        found = (score.metadata or {})["sources"]
        prompt = str(sample.input)
        sources["rs"] += [(prompt, t) for t in found["rs"]]
        sources["sar"] += [(prompt, t) for t in [*found["rs"], *found["repairs"]]]
        sources["rewrite"] += [(prompt, t) for t in found.get("rewrite", [])]
        sources["synth"] += [(prompt, t) for t in found.get("synth", [])]
        verdicts = (score.metadata or {})["verdicts"]
        stats["repairs_tried"] += len(verdicts)
        stats["repairs_accepted"] += len(found["repairs"])
        ratios += [float(v["edit_ratio"]) for v in verdicts]
    stats["mean_edit_ratio"] = statistics.mean(ratios) if ratios else None
    sources["_stats"] = [
        stats,
        log.results.scores[0].metrics["mean"].value if log.results else None,
    ]
    return sources


def accuracy(checkpoint: Path, out: Path, problems: int, max_tokens: int = 256) -> float:
    """`docket/toy_math` accuracy of a checkpoint on the test problems (greedy). The tiny
    student's tokens are characters: style B and C traces need about 150 of them."""
    from inspect_ai import eval as inspect_eval

    from docket.benchmarks.toy_math.toy_math import toy_math

    [log] = inspect_eval(
        toy_math(size=problems, max_tokens=max_tokens, style="bare"),
        model=_local(checkpoint),
        log_dir=str(out / "logs"),
        display="none",
    )
    assert log.results is not None
    return float(log.results.scores[0].metrics["accuracy"].value)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole experiment; returns (and writes) the results."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    student = initial_student(
        out,
        args.pretrain,
        args.slip_rate,
        args.pretrain_steps,
        0,
        args.hidden,
        args.layers,
        args.pretrain_lr,
    )
    base_accuracy = accuracy(student, out, args.test)
    sources = collect(student, out, args.train, args.k, args.budget)
    stats, rs_yield = sources.pop("_stats")
    model = AutoModelForCausalLM.from_pretrained(str(student))
    tokenizer = AutoTokenizer.from_pretrained(str(student))
    results: dict[str, Any] = {
        "initial_accuracy": base_accuracy,
        "rs_yield": rs_yield,
        "repairs": stats,
        "sources": {},
    }
    for name in SOURCES:
        examples = sources[name]
        if not examples:  # nothing to train on (e.g. no sample verified)
            results["sources"][name] = {"examples": 0, "nll": None, "accuracy": []}
            continue
        cost = adaptation_cost(model, tokenizer, examples)
        scores = []
        for seed in range(args.seeds):
            folder = out / f"{name}-{seed}"
            sft(
                student,
                examples,
                folder,
                SFTSettings(
                    steps=args.steps,
                    batch=16,
                    lr=args.lr,
                    seed=seed,
                    schedule="cosine",
                    warmup=0.05,
                ),
            )
            scores.append(accuracy(folder, out, args.test))
        results["sources"][name] = {"examples": len(examples), "nll": cost, "accuracy": scores}
        print(name, results["sources"][name], flush=True)
    results["wall_s"] = round(time.monotonic() - started)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def table(results: dict[str, Any]) -> str:
    """The README's Markdown table."""
    lines = [
        "| data source | examples | NLL/token under the initial student "
        "| accuracy after SFT (mean ± sd) | per seed |",
        "|---|---|---|---|---|",
        f"| initial student (no SFT) | – | – | {results['initial_accuracy']:.3f} | – |",
    ]
    for name, row in results["sources"].items():
        acc = row["accuracy"]
        if not acc:
            lines.append(f"| {name} | 0 | – | – | – |")
            continue
        spread = statistics.stdev(acc) if len(acc) > 1 else 0.0
        lines.append(
            f"| {name} | {row['examples']} | {row['nll']:.3f} | {statistics.mean(acc):.3f} ± "
            f"{spread:.3f} | {', '.join(f'{a:.3f}' for a in acc)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI."""
    parser = argparse.ArgumentParser(prog="python benchmarks/toy_math/scripts/experiment.py")
    parser.add_argument("--out", type=Path, default=Path("runs/sar"))
    parser.add_argument("--pretrain", type=int, default=3000, help="pretraining problems")
    parser.add_argument("--pretrain-steps", type=int, default=1500)
    parser.add_argument("--pretrain-lr", type=float, default=2e-3, help="peak (cosine)")
    parser.add_argument("--slip-rate", type=float, default=0.1, help="share of slipped traces")
    parser.add_argument("--hidden", type=int, default=96, help="student width")
    parser.add_argument("--layers", type=int, default=3, help="student depth")
    parser.add_argument("--train", type=int, default=300, help="SAR problems")
    parser.add_argument("--test", type=int, default=150, help="test problems")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--budget", type=float, default=0.3)
    parser.add_argument("--steps", type=int, default=150, help="SFT steps per source")
    parser.add_argument("--lr", type=float, default=1e-4, help="SFT peak learning rate (cosine)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    results = run(args)
    print(
        f"initial student accuracy {results['initial_accuracy']:.3f}; "
        f"RS yield {results['rs_yield']}"
    )
    print(f"repairs: {results['repairs']}")
    print(table(results))
    print(f"wall time {results['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
