"""Train a SHINE hypernet for `docket/context_qa` and save a checkpoint `docket/local` scores.

    python benchmarks/context_qa/scripts/train_shine.py --out runs/shine --seed 0
    inspect eval docket/context_qa -T context=reference --model docket/local/runs/shine \\
        -M method=shine -M context=benchmarks/context_qa/data/contexts.jsonl

Stages (each with a progress bar):
0. Without `--backbone`, a tiny Llama is built and fully trained on the toy corpus (in-context
   QA, and question-only prompts so it learns to guess in the answer format): the stand-in for a
   pretrained LLM. With `--backbone DIR` a real checkpoint (e.g. Qwen3-0.6B) is used as is.
1. SHINE pretraining on the corpus contexts (reconstruction / completion), backbone frozen.
2. QA instruction tuning: context -> adapter, `[context: ID]` question -> answer.
3. Evaluation on the shipped set (never trained on): mean log-probability of the gold answer
   with the generated adapter, without it, and with the context in the prompt.

OUT then holds the backbone checkpoint (config, weights, tokenizer) and `OUT/shine/` the
hypernet; `OUT/metrics.json` the stage losses and the evaluation.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

from docket.benchmarks.context_qa.dataset import Context, Question, generate, load
from docket.benchmarks.context_qa.prompts import render

TRAIN_SEED_OFFSET = 1000  # training corpora use seeds far from the shipped set's


def corpus(seed: int, n_contexts: int) -> tuple[list[Context], list[Question]]:
    """The training corpus of run `seed` (every fact asked). Ids have the shipped set's form
    (`ctx-` and 12 hex digits of a hash), so the `[context: ID]` tag is no cue either way."""
    return generate(n_contexts, TRAIN_SEED_OFFSET + seed, per_context=8)


def _pairs(contexts: list[Context], questions: list[Question], mode: str) -> list[tuple[str, str]]:
    texts = {c.id: c.text for c in contexts}
    return [
        (
            render(mode, context=texts[q.context_id], context_id=q.context_id, question=q.question),
            q.answer,
        )
        for q in questions
    ]


def build_backbone(
    out: Path, contexts: list[Context], questions: list[Question], args: Any
) -> tuple[Any, Any, list[float]]:
    """Stage 0: a tiny Llama trained on the corpus (in-context QA + question-only guesses)."""
    import random

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from docket.core.tiny_models import build_tiny_lm
    from docket.methods.adaptation.tiny import train_lm

    in_context = _pairs(contexts, questions, "prompt")
    guesses = _pairs(contexts, questions, "reference")
    texts = [p + " " + t for p, t in in_context[:2000]] + [c.text for c in contexts[:500]]
    build_tiny_lm(out, texts, hidden=args.hidden, layers=args.layers, seed=args.seed)
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    rng = random.Random(args.seed)
    pairs = in_context + rng.sample(guesses, len(guesses) // 4)
    losses = train_lm(
        model,
        tokenizer,
        pairs,
        steps=args.lm_steps,
        lr=args.lm_lr,
        seed=args.seed,
        description="stage 0: backbone LM",
        progress=not args.no_progress,
    )
    model.save_pretrained(out)
    return model, tokenizer, losses


def evaluate(
    hypernet: Any, model: Any, tokenizer: Any, folder: Path | None = None
) -> dict[str, float]:
    """Mean gold-answer log-probability on the shipped set: adapter / none / in-context."""
    from docket.methods.adaptation.shine import ShineExample, answer_logprob

    contexts, questions = load(folder) if folder else load()
    scores: dict[str, list[float]] = {"adapter": [], "no_context": [], "in_context": []}
    for q in questions:
        text = contexts[q.context_id]
        reference = render("reference", context=text, context_id=q.context_id, question=q.question)
        in_prompt = render("prompt", context=text, context_id=q.context_id, question=q.question)
        scores["adapter"].append(
            answer_logprob(hypernet, model, tokenizer, ShineExample(text, reference, q.answer))
        )
        scores["no_context"].append(
            answer_logprob(None, model, tokenizer, ShineExample(text, reference, q.answer))
        )
        scores["in_context"].append(
            answer_logprob(None, model, tokenizer, ShineExample(text, in_prompt, q.answer))
        )
    return {f"logprob_{k}": statistics.fmean(v) for k, v in scores.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--backbone", type=Path, help="an existing checkpoint (skips stage 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--contexts", type=int, default=3000, help="training contexts")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lm-steps", type=int, default=1500)
    parser.add_argument("--lm-lr", type=float, default=3e-3)
    parser.add_argument("--pretrain-steps", type=int, default=200)
    parser.add_argument("--qa-steps", type=int, default=1500)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rank", type=int, default=2)
    parser.add_argument("--meta-rank", type=int, default=8)
    parser.add_argument(
        "--scale", type=float, default=0.05, help="SHINE: 1e-3 at hidden 4096; ~0.05 at 64"
    )
    parser.add_argument("--m2p-layers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from docket.methods.adaptation import shine

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    contexts, questions = corpus(args.seed, args.contexts)
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    if args.backbone:
        model = AutoModelForCausalLM.from_pretrained(args.backbone)
        tokenizer = AutoTokenizer.from_pretrained(args.backbone)
        model.save_pretrained(args.out)
    else:
        model, tokenizer, lm_losses = build_backbone(args.out, contexts, questions, args)
        report["lm_loss_last"] = statistics.fmean(lm_losses[-50:])
    tokenizer.save_pretrained(args.out)
    config = shine.ShineConfig(
        rank=args.rank, meta_rank=args.meta_rank, scale=args.scale, m2p_layers=args.m2p_layers
    )
    hypernet = shine.ShineHypernet.for_backbone(model, config)
    progress = not args.no_progress
    texts = [c.text for c in contexts]
    train = shine.TrainConfig(
        batch_size=args.batch_size, lr=args.lr, warmup=50, seed=args.seed, progress=progress
    )
    if args.pretrain_steps:
        train.steps = args.pretrain_steps
        losses = shine.train_shine(
            hypernet,
            model,
            tokenizer,
            shine.pretraining_examples(texts, seed=args.seed),
            train,
            "stage 1: SHINE pretraining",
        )
        report["pretrain_loss_last"] = statistics.fmean(losses[-50:])
    train.steps = args.qa_steps
    by_id = {c.id: c.text for c in contexts}
    qa = [
        shine.ShineExample(
            by_id[q.context_id],
            render("reference", context="", context_id=q.context_id, question=q.question),
            q.answer,
        )
        for q in questions
    ]
    losses = shine.train_shine(hypernet, model, tokenizer, qa, train, "stage 2: SHINE QA tuning")
    report["qa_loss_last"] = statistics.fmean(losses[-50:])
    shine.save_hypernet(hypernet, args.out / "shine")
    report["eval"] = evaluate(hypernet, model, tokenizer)
    report["config"] = asdict(config)
    (args.out / "metrics.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report["eval"], indent=2))
    return report


if __name__ == "__main__":
    main()
