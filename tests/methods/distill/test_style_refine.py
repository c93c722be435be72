"""SAR's pieces: edit ratios, the repair filter, adaptation cost (exact, and its sanity on a
student trained on one style), and TRL's SFTTrainer producing a checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from docket.benchmarks.toy_math.reference import Chain, question, repair_a, style_a, style_b
from docket.core.tiny_models import ascii_tokenizer, tiny_causal_lm
from docket.methods.distill.style_refine import (
    SFTSettings,
    adaptation_cost,
    edit_ratio,
    judge_repair,
    rejection_sample,
    sft,
)

CHAIN = Chain(7, (("+", 5), ("*", 3)))


def right(text: str) -> bool:
    return text.strip().endswith("ANSWER: 36")


def test_edit_ratio_in_characters_and_words() -> None:
    assert edit_ratio("7+5=12", "7+5=12") == 0.0
    assert edit_ratio("7+5=13", "7+5=12") == pytest.approx(1 / 6)
    assert edit_ratio("a b c d", "a x c d", unit="word") == 0.25
    assert edit_ratio("", "abc") == 3.0
    with pytest.raises(ValueError, match="char or word"):
        edit_ratio("a", "b", unit="token")


def test_minimal_repair_is_kept_and_rewrites_and_wrong_repairs_are_not() -> None:
    slipped = style_a(CHAIN, slip=(0, 1))  # 7+5=13 / 13*3=39 / ANSWER: 39
    assert slipped.splitlines() == ["7+5=13", "13*3=39", "ANSWER: 39"]
    repaired = repair_a(CHAIN, slipped)
    assert repaired == style_a(CHAIN)
    kept = judge_repair(slipped, repaired, right, budget=0.3)
    assert kept.accepted and kept.edit_ratio == pytest.approx(4 / len(slipped))
    rewrite = judge_repair(slipped, style_b(CHAIN), right, budget=0.3)
    assert rewrite.verified and not rewrite.accepted and "over budget" in rewrite.reason
    wrong = judge_repair(slipped, slipped, right, budget=0.3)
    assert not wrong.verified and "still wrong" in wrong.reason
    correct, failed = rejection_sample([style_a(CHAIN), slipped, repaired], right)
    assert correct == [style_a(CHAIN), repaired] and failed == [slipped]


def test_adaptation_cost_is_the_mean_completion_token_nll() -> None:
    tokenizer = ascii_tokenizer()
    model = tiny_causal_lm(len(tokenizer), hidden=32, layers=1, heads=2, seed=3)
    prompt, completion = question(CHAIN), style_a(CHAIN)
    head = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer.encode(head + completion, add_special_tokens=False)
    start = len(tokenizer.encode(head, add_special_tokens=False))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits, -1)
    manual = -sum(float(logp[t - 1, ids[t]]) for t in range(start, len(ids))) / (len(ids) - start)
    assert adaptation_cost(model, tokenizer, [(prompt, completion)]) == pytest.approx(manual, 1e-5)


def test_a_student_trained_on_style_a_finds_style_a_cheaper(tmp_path: Path) -> None:
    """TRL SFTTrainer on style A; the trained checkpoint prefers A to B (the proxy's sanity)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = ascii_tokenizer()
    model = tiny_causal_lm(len(tokenizer), hidden=48, layers=2, heads=2, seed=0)
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    chains = [Chain(s, (("+", a), ("*", b))) for s in range(1, 6) for a in (2, 3) for b in (2, 4)]
    train = [(question(c), style_a(c)) for c in chains]
    losses = sft(
        tmp_path / "base", train, tmp_path / "student", SFTSettings(steps=40, batch=8, lr=3e-3)
    )
    assert losses and losses[-1] < losses[0]
    student = AutoModelForCausalLM.from_pretrained(tmp_path / "student")
    loaded = AutoTokenizer.from_pretrained(tmp_path / "student")
    held = [Chain(8, (("+", 4), ("*", 3))), Chain(9, (("+", 2), ("*", 2)))]
    cost_a = adaptation_cost(student, loaded, [(question(c), style_a(c)) for c in held])
    cost_b = adaptation_cost(student, loaded, [(question(c), style_b(c)) for c in held])
    assert cost_a < cost_b
