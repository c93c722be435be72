"""SHINE: layout bookkeeping, per-sample LoRA, M2P equivariance, PEFT export, training."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from docket.core.tiny_models import random_llama
from docket.methods.adaptation import shine
from docket.methods.adaptation.lm import prompt_ids, target_ids, target_logprobs, text_ids
from docket.methods.adaptation.lora import (
    LoraLayout,
    LoraTarget,
    export_peft,
    functional_lora,
    layout_for,
    select,
)

CONFIG = shine.ShineConfig(rank=2, meta_rank=4, scale=1.0, m2p_layers=2)


def hypernet_for(model: Any, config: shine.ShineConfig = CONFIG, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    net = shine.ShineHypernet.for_backbone(model, config)
    with torch.no_grad():  # non-zero meta-LoRA B so the meta-LoRA path is exercised
        for b in net.meta_b:
            b.normal_(0, 0.02)
    return net.eval()


def test_layout_counts_and_memory_tokens(tiny: tuple[Any, Any]) -> None:
    model, _ = tiny
    layout = layout_for(model, rank=2)
    shapes = {t.name.split(".")[-1]: (t.in_features, t.out_features) for t in layout.targets}
    assert shapes == {
        "q_proj": (32, 32),
        "k_proj": (32, 16),
        "v_proj": (32, 16),
        "o_proj": (32, 32),
        "gate_proj": (32, 64),
        "up_proj": (32, 64),
        "down_proj": (64, 32),
    }
    # 2 * (64 + 48 + 48 + 64 + 96 + 96 + 96) = 1024 = 32 x 32
    assert layout.numel_per_layer == 1024
    assert layout.numel == 2048
    assert layout.memory_tokens(32) == 32
    with pytest.raises(ValueError, match="not a multiple of the hidden size"):
        layout.memory_tokens(30)
    assert layout.memory_tokens(30, pad=True) == 35  # ceil(1024 / 30)
    assert layout.paths()[0] == "model.layers.0.self_attn.q_proj"


def test_split_reads_blocks_in_order_with_sqrt_scale() -> None:
    layout = LoraLayout("layers", 1, (LoraTarget("a", 2, 3), LoraTarget("b", 1, 1)), rank=1)
    vector = torch.arange(1.0, 9.0).reshape(1, 1, 8)  # a: A 2, B 3; b: A 1, B 1
    adapters = layout.split(vector, scale=4.0)
    a_a, a_b = adapters["layers.0.a"]
    assert a_a.tolist() == [[[2.0], [4.0]]]
    assert a_b.tolist() == [[[6.0, 8.0, 10.0]]]
    assert adapters["layers.0.b"][0].tolist() == [[[12.0]]]
    assert adapters["layers.0.b"][1].tolist() == [[[14.0]]]


def test_scale_zero_gives_the_frozen_model(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    net = hypernet_for(model, shine.ShineConfig(rank=2, meta_rank=4, scale=0.0, m2p_layers=2))
    ids = [text_ids(tokenizer, "The code is 42.")]
    adapters, _ = net(model, ids)
    question = torch.tensor([prompt_ids(tokenizer, "What is the code?")])
    with torch.no_grad(), functional_lora(model, adapters):
        adapted = model(input_ids=question).logits
    with torch.no_grad():
        frozen = model(input_ids=question).logits
    assert torch.equal(adapted, frozen)


def test_each_sample_carries_its_own_adapter(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    net = hypernet_for(model)
    one, two = text_ids(tokenizer, "The code is 42."), text_ids(tokenizer, "Mira lives in Oslo.")
    prompt = prompt_ids(tokenizer, "What is the code?")
    target = target_ids(tokenizer, "42")
    with torch.no_grad():
        batch, _ = net(model, [one, two])
        alone_one, _ = net(model, [one])
        alone_two, _ = net(model, [two])
        swapped, _ = net(model, [two, one])
        together = target_logprobs(model, batch, [prompt, prompt], [target, target])
        separate = [
            target_logprobs(model, alone_one, [prompt], [target])[0],
            target_logprobs(model, alone_two, [prompt], [target])[0],
        ]
        crossed = target_logprobs(model, swapped, [prompt, prompt], [target, target])
    for path, (a, b) in alone_one.items():
        torch.testing.assert_close(select(batch, 0)[path][0], a, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(select(batch, 0)[path][1], b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(together[0], separate[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(together[1], separate[1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(crossed[0], separate[1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(crossed[1], separate[0], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(separate[0], separate[1])  # the two adapters differ


def test_gradients_reach_only_the_hypernet(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    shine.freeze(model)
    net = hypernet_for(model).train()
    batch = shine.encode(
        tokenizer, [shine.ShineExample("The code is 42.", "What is the code?", "42")], 64
    )
    shine.shine_loss(net, model, batch).backward()
    assert all(p.grad is None for p in model.parameters())
    assert net.memory.grad is not None and net.memory.grad.abs().sum() > 0
    assert all(p.grad is not None for p in net.meta_b)
    assert all(p.grad is not None for p in net.m2p.parameters())


def test_m2p_is_equivariant_to_memory_slot_permutations() -> None:
    torch.manual_seed(0)
    m2p = shine.M2PTransformer(3, 5, 8, depth=4, heads=2).eval()
    with torch.no_grad():
        m2p.layer_pe.normal_()  # layer positions may stay; slot positions must be zero
    states = torch.randn(2, 3, 5, 8)
    order = torch.tensor([3, 0, 4, 1, 2])
    with torch.no_grad():
        out = m2p(states).reshape(2, 3, 5, 8)
        permuted = m2p(states[:, :, order]).reshape(2, 3, 5, 8)
    torch.testing.assert_close(permuted, out[:, :, order], atol=1e-5, rtol=1e-5)
    assert [m2p.across_layers(i) for i in range(4)] == [True, False, True, False]


def test_peft_export_reproduces_the_functional_forward(
    tiny: tuple[Any, Any], tiny_dir: Path, tmp_path: Path
) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model, tokenizer = tiny
    net = hypernet_for(model, shine.ShineConfig(rank=2, meta_rank=4, scale=0.05, m2p_layers=2))
    with torch.no_grad():
        adapters, _ = net(model, [text_ids(tokenizer, "Mira lives in Oslo.")])
    folder = export_peft(adapters, net.layout, tmp_path / "adapter")
    assert json.loads((folder / "adapter_config.json").read_text())["r"] == 2
    question = torch.tensor([prompt_ids(tokenizer, "Where does Mira live?")])
    with torch.no_grad(), functional_lora(model, adapters):
        functional = model(input_ids=question).logits
    peft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_dir), folder)
    peft_model.eval()
    with torch.no_grad():
        exported = peft_model(input_ids=question).logits
        base = model(input_ids=question).logits
    torch.testing.assert_close(exported, functional, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(base, functional, atol=1e-3)  # the adapter does something
    with pytest.raises(ValueError, match="one adapter, not a batch of 2"):
        doubled = {k: (torch.cat([a, a]), torch.cat([b, b])) for k, (a, b) in adapters.items()}
        export_peft(doubled, net.layout, tmp_path / "bad")


def test_save_load_round_trip_and_layout_check(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    model, tokenizer = tiny
    net = hypernet_for(model)
    shine.save_hypernet(net, tmp_path / "shine")
    loaded = shine.load_hypernet(tmp_path / "shine", model)
    ids = [text_ids(tokenizer, "The code is 42.")]
    with torch.no_grad():
        for path, (a, b) in net(model, ids)[0].items():
            torch.testing.assert_close(loaded(model, ids)[0][path][0], a)
            torch.testing.assert_close(loaded(model, ids)[0][path][1], b)
    other = random_llama(64, hidden=32, intermediate=64, layers=3, heads=4, kv_heads=2, seed=None)
    with pytest.raises(ValueError, match="another backbone layout"):
        shine.load_hypernet(tmp_path / "shine", other)
    with pytest.raises(ValueError, match="no trained hypernet"):
        shine.load_hypernet(tmp_path / "missing", model)


def test_pretraining_examples_mix_reconstruction_and_completion() -> None:
    text = " ".join(f"w{i}" for i in range(20))
    examples = shine.pretraining_examples([text] * 200, seed=1)
    recon = [e for e in examples if e.prompt == shine.RECON_PROMPT]
    completion = [e for e in examples if e.prompt == shine.COMPLETION_PROMPT]
    assert len(recon) + len(completion) == 200 and 70 < len(completion) < 130
    assert all(e.context == text and e.target == text for e in recon)
    for e in completion:
        kept = len(e.context.split())
        assert 14 <= kept <= 18 and text.startswith(e.context) and e.target == text


def test_tiny_overfit_learns_context_to_answer(tiny: tuple[Any, Any], one_thread: None) -> None:
    """A random 2-layer backbone, frozen: the hypernet learns `The code is K.` -> `K`."""
    model, tokenizer = tiny
    torch.manual_seed(0)
    net = shine.ShineHypernet.for_backbone(model, shine.ShineConfig(rank=2, meta_rank=4, scale=0.1))
    examples = [
        shine.ShineExample(f"The code is {k}.", "What is the code?", str(k)) for k in range(8)
    ]
    config = shine.TrainConfig(steps=150, batch_size=8, lr=3e-3, warmup=20, progress=False)
    losses = shine.train_shine(net, model, tokenizer, examples, config)
    assert losses[-1] < 0.1 * losses[0]
    correct = 0
    for example in examples:
        context = text_ids(tokenizer, example.context)
        prompt = prompt_ids(tokenizer, example.prompt)
        with torch.no_grad():
            adapters, _ = net(model, [context])
            with functional_lora(model, adapters):
                logits = model(input_ids=torch.tensor([prompt])).logits[0, -1]
        correct += int(int(logits.argmax()) == target_ids(tokenizer, example.target)[0])
    assert correct == 8
