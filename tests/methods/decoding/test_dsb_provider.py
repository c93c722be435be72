"""DSB as a model under test: the toy training script's checkpoint through `docket/local
-M method=dsb` (knobs, counters in the log of an Inspect eval), the transformers masked-LM path,
and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import ChatMessageUser, GenerateConfig

from docket.methods.decoding.dsb.toy_mdlm import data
from docket.methods.decoding.dsb.toy_mdlm.train import TrainConfig
from docket.methods.local.provider import LocalHFModelAPI

TINY = TrainConfig(
    steps=30, batch=8, hidden=32, layers=2, heads=2, mlp=64, warmup=5, lr=3e-3, log_every=10
)


def test_training_script_writes_a_loadable_checkpoint_and_lowers_the_loss(toy_dir: Path) -> None:
    from docket.methods.decoding.dsb.toy_mdlm.checkpoint import is_toy_checkpoint, load

    record = json.loads((toy_dir / "train_log.json").read_text())
    losses = [loss for _, loss in record["losses"]]
    assert [step for step, _ in record["losses"]] == [10, 20, 30]
    assert record["train_config"]["steps"] == 30
    assert is_toy_checkpoint(toy_dir)
    model, tokenizer = load(toy_dir)
    assert model.config.mask_token_id == tokenizer.convert_tokens_to_ids(data.MASK)
    assert losses[-1] < losses[0] < 5.6  # ln(258) is chance
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "sort: dcba"}], tokenize=False, add_generation_prompt=True
    )
    assert prompt == data.render_prompt("sort: dcba")


def test_the_corpus_answers_are_exact() -> None:
    assert data.Example("sort", "dcab").answer == "abcd"
    assert data.Example("reverse", "abc").answer == "cba"
    assert data.Example("copy", "abc").answer == "abc"
    assert data.eval_set(5) == data.eval_set(5)  # fixed held-out set


def api(path: Path, **knobs: Any) -> LocalHFModelAPI:
    return LocalHFModelAPI("local", path=str(path), method="dsb", **knobs)


async def test_docket_local_decodes_with_dsb_and_logs_counters(toy_dir: Path) -> None:
    model = api(toy_dir, block_length=4, threshold="0.5", gen_length=12, cache="dsb")
    output = await model.generate(
        [ChatMessageUser(content="copy: abc")], [], "none", GenerateConfig()
    )
    assert output.metadata is not None and output.metadata["method"] == "dsb"
    counters = output.metadata["choices"][0]
    assert counters["schedule"] == "dsb" and counters["cache"] == "dsb"
    assert counters["nfe"] == counters["global_forwards"] + counters["window_forwards"]
    assert counters["tokens_per_forward"] == round(12 / counters["nfe"], 4)
    assert counters["gen_length"] == 12 and counters["latency_s"] > 0
    assert len(output.choices[0].message.text) <= 12


async def test_max_tokens_sets_the_answer_length_and_logprobs_come_back(toy_dir: Path) -> None:
    model = api(toy_dir, schedule="naive", block_length=4)
    output = await model.generate(
        [ChatMessageUser(content="reverse: abcd")],
        [],
        "none",
        GenerateConfig(max_tokens=8, logprobs=True, top_logprobs=2),
    )
    assert output.metadata is not None
    counters = output.metadata["choices"][0]
    assert counters["gen_length"] == 8 and counters["nfe"] >= 2
    assert counters["threshold"] == 0.9 and counters["steps"] is None
    logprobs = output.choices[0].logprobs
    assert logprobs is not None
    assert all(len(entry.top_logprobs or []) == 2 for entry in logprobs.content)


async def test_steps_decode_with_llada_fixed_quota(toy_dir: Path) -> None:
    model = api(toy_dir, schedule="naive", block_length=4, steps=8, gen_length=8)
    output = await model.generate(
        [ChatMessageUser(content="copy: abcd")], [], "none", GenerateConfig()
    )
    assert output.metadata is not None
    counters = output.metadata["choices"][0]
    assert counters["threshold"] is None and counters["steps"] == 8
    assert counters["nfe"] == 8  # one token per step


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"threshold": 2}, r"-M method=dsb: -M threshold=2 is not valid \(a number in \[0, 1\]\)"),
        ({"schedule": "fast"}, r"-M schedule='fast' is not valid \(one of dsb, dsb_const, naive\)"),
        ({"block_length": 0}, r"-M block_length=0 is not valid \(an integer >= 1\)"),
        ({"steps": 8, "threshold": 0.5}, r"-M steps .* and -M threshold .* exclude each other"),
    ],
)
def test_bad_knobs_are_one_line(toy_dir: Path, knobs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        api(toy_dir, **knobs)


def test_a_causal_lm_or_gguf_is_refused_in_one_line(tmp_path: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    from docket.core.tiny_models import random_llama

    random_llama(
        300, hidden=16, layers=1, heads=2, kv_heads=1, intermediate=32, seed=None
    ).save_pretrained(tmp_path)
    tokenizer = data.build_tokenizer()
    assert isinstance(tokenizer, PreTrainedTokenizerFast)
    tokenizer.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="not a masked-diffusion / masked LM checkpoint"):
        api(tmp_path)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny BertForMaskedLM with the toy tokenizer (a transformers masked LM)."""
    from docket.core.tiny_models import random_bert_mlm

    tokenizer: Any = data.build_tokenizer()
    model = random_bert_mlm(
        len(tokenizer), hidden=32, layers=2, heads=2, intermediate=64, max_position_embeddings=128
    )
    path = tmp_path_factory.mktemp("bert-mlm")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


async def test_transformers_masked_lm_path_decodes_without_a_cache(bert_dir: Path) -> None:
    model = api(bert_dir, block_length=4, gen_length=8, threshold=0.5)
    output = await model.generate(
        [ChatMessageUser(content="copy: ab")], [], "none", GenerateConfig()
    )
    assert output.metadata is not None
    counters = output.metadata["choices"][0]
    assert counters["window_forwards"] == 0 and 2 <= counters["nfe"] <= 8
    with pytest.raises(
        ValueError, match="-M cache=dsb needs a forward that takes replace_position"
    ):
        api(bert_dir, cache="dsb")


@pytest.mark.slow
def test_an_inspect_eval_scores_the_method_and_keeps_its_counters(
    toy_dir: Path, tmp_path: Path
) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.event import ModelEvent
    from inspect_ai.scorer import exact

    examples = data.eval_set(2)
    task = Task(
        dataset=[Sample(input=e.question, target=e.answer) for e in examples], scorer=exact()
    )
    log = inspect_eval(
        task,
        model=f"docket/local/{toy_dir}",
        model_args={"method": "dsb", "block_length": 4, "gen_length": 12},
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert log.status == "success" and log.samples is not None
    nfes = []
    for sample in log.samples:
        events = [e for e in sample.events if isinstance(e, ModelEvent)]
        metadata = events[0].output.metadata
        assert metadata is not None and metadata["choices"][0]["nfe"] >= 3
        nfes.append(metadata["choices"][0]["nfe"])
    assert log.results is not None and log.results.scores[0].name == "exact"
    # the leaderboard shows the mean counters of the run's model calls
    from docket.reports.leaderboard import build_report

    files = build_report(tmp_path, tmp_path / "report")
    table = json.loads(files.json.read_text())
    entry = table["benchmarks"][0]["tables"][0]["entries"][0]
    assert entry["method_counters"]["method"] == "dsb"
    assert entry["method_counters"]["calls"] == 2
    assert entry["method_counters"]["nfe"] == sum(nfes) / 2
    assert f"dsb: nfe {sum(nfes) / 2:.3g}" in files.markdown.read_text()
    assert "dsb: nfe" in files.html.read_text()
