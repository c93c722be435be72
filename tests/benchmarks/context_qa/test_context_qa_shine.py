"""SHINE end to end on CPU: a tiny backbone and hypernet trained on the toy corpus raise the
likelihood of answers about unseen contexts, and `docket/local -M method=shine` scores them."""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

import pytest
import torch
from inspect_ai import eval as inspect_eval

from docket.benchmarks.context_qa.dataset import generate, write
from docket.benchmarks.context_qa.prompts import render
from docket.core.inspect_private import max_f1_score

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any, Any]:
    """Backbone (trained on in-context QA, frozen) + SHINE hypernet, both saved to a folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from docket.core.tiny_models import build_tiny_lm
    from docket.methods.adaptation import shine
    from docket.methods.adaptation.tiny import train_lm

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    contexts, questions = generate(600, 1, people=1, per_context=4)
    texts = {c.id: c.text for c in contexts}

    def prompt(mode: str, q: Any) -> str:
        return render(
            mode, context=texts[q.context_id], context_id=q.context_id, question=q.question
        )

    folder = tmp_path_factory.mktemp("shine-run")
    corpus = [prompt("prompt", q) + " " + q.answer for q in questions[:400]]
    build_tiny_lm(folder, corpus, hidden=64, layers=2)
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    pairs = [(prompt("prompt", q), q.answer) for q in questions]
    pairs += [(prompt("reference", q), q.answer) for q in questions[::4]]
    train_lm(model, tokenizer, pairs, steps=300, batch_size=16, lr=3e-3, progress=False)
    model.save_pretrained(folder)
    hypernet = shine.ShineHypernet.for_backbone(
        model, shine.ShineConfig(rank=2, meta_rank=8, scale=0.05, m2p_layers=2)
    )
    examples = [
        shine.ShineExample(texts[q.context_id], prompt("reference", q), q.answer) for q in questions
    ]
    config = shine.TrainConfig(steps=200, batch_size=8, lr=2e-3, warmup=20, progress=False)
    shine.train_shine(hypernet, model, tokenizer, examples, config)
    shine.save_hypernet(hypernet, folder / "shine")
    torch.set_num_threads(threads)
    return folder, model, tokenizer, hypernet


@pytest.mark.slow
def test_adapter_raises_answer_likelihood_on_unseen_contexts(
    trained: tuple[Path, Any, Any, Any],
) -> None:
    from docket.methods.adaptation.shine import ShineExample, answer_logprob

    _, model, tokenizer, hypernet = trained
    contexts, questions = generate(20, 99, people=1, per_context=2)  # never trained on
    texts = {c.id: c.text for c in contexts}
    with_adapter, without = [], []
    for q in questions:
        prompt = render("reference", context="", context_id=q.context_id, question=q.question)
        example = ShineExample(texts[q.context_id], prompt, q.answer)
        with_adapter.append(answer_logprob(hypernet, model, tokenizer, example))
        without.append(answer_logprob(None, model, tokenizer, example))
    gain = statistics.fmean(with_adapter) - statistics.fmean(without)
    assert gain > 0.3, f"mean answer log-probability gain {gain:.3f}"


@pytest.mark.slow
def test_docket_local_scores_shine_through_the_harness(
    trained: tuple[Path, Any, Any, Any], tmp_path: Path
) -> None:
    from docket.methods.adaptation.lm import prompt_ids
    from docket.methods.adaptation.lora import functional_lora
    from docket.methods.adaptation.shine import text_ids
    from docket.methods.local.sampling import DecodeParams, greedy

    folder, model, tokenizer, hypernet = trained
    contexts, questions = generate(4, 99, people=1, per_context=2)
    data = tmp_path / "data"
    write(contexts, questions, data)
    log = inspect_eval(
        "docket/context_qa",
        model=f"docket/local/{folder}",
        model_args={"method": "shine", "context": str(data / "contexts.jsonl")},
        task_args={"context": "reference", "data": str(data)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    assert log.status == "success" and log.samples is not None
    texts = {c.id: c.text for c in contexts}
    expected = []
    for sample in sorted(log.samples, key=lambda s: str(s.id)):
        question = next(q for q in questions if q.id == sample.id)
        ids = prompt_ids(
            tokenizer,
            render(
                "reference", context="", context_id=question.context_id, question=question.question
            ),
        )
        with torch.no_grad():
            adapters, _ = hypernet(model, [text_ids(tokenizer, texts[question.context_id])])
            with functional_lora(model, adapters):
                answer = greedy(model, tokenizer, ids, DecodeParams(max_new_tokens=8))[0].text
        assert sample.output.completion == answer
        expected.append(max_f1_score(answer, [question.answer]))
        calls = [e for e in sample.events if e.event == "model"]
        metadata = calls[0].output.metadata
        assert metadata is not None
        counters = metadata["choices"][0]
        assert counters["context_id"] == question.context_id
        assert counters["lora_parameters"] == hypernet.layout.numel
    assert log.results is not None
    f1 = next(s for s in log.results.scores if s.name == "f1").metrics["mean"].value
    assert f1 == pytest.approx(statistics.fmean(expected))
