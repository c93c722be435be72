"""Prepacked oneDNN linear layers: the same outputs as the dense model, only inside `active()`."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from docket.methods.local import packing
from docket.methods.local.batching import DecodeEngine, Request
from docket.methods.local.kv_reuse import PrefixStore
from docket.methods.local.packing import LinearPacker, pack_mode, packer_for
from docket.methods.local.sampling import DecodeParams, greedy, greedy_choice
from tests.methods.local.test_batching import prompts, run_together
from tests.methods.local.test_kv_reuse import tiny

__all__ = ["tiny"]  # the shared fixture

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not packing.packing_supported(), reason="this torch build has no oneDNN linear kernels"
)


def logits(model: Any, ids: list[int]) -> Any:
    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids])).logits[0]


def test_packed_forward_equals_dense(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    ids = prompts(tokenizer)[1]
    dense = logits(model, ids)
    packer = LinearPacker(model)
    assert len(packer.layers) == 2 * 7 + 1  # q, k, v, o, gate, up, down per layer; lm_head
    with packer.active():
        packed = logits(model, ids)
    assert packer.packed_calls == len(packer.layers)  # every layer took the packed path
    assert torch.allclose(packed, dense, atol=1e-4, rtol=0)
    assert packer.packs == len(packer.layers)


def test_layers_are_dense_again_after_the_block(tiny: tuple[Any, Any]) -> None:
    model, _ = tiny
    packer = LinearPacker(model)
    with packer.active():
        pass
    assert all("forward" not in layer.__dict__ for layer in packer.layers)
    with torch.inference_mode():
        model(input_ids=torch.tensor([[1, 2, 3]]))
    assert packer.packed_calls == 0


def test_a_changed_weight_is_packed_again(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    ids = prompts(tokenizer)[0]
    packer = LinearPacker(model)
    with packer.active():
        logits(model, ids)
    layer = model.lm_head
    saved = layer.weight.detach().clone()
    try:
        with torch.no_grad():
            layer.weight.mul_(-1.0)  # in place: same tensor, same storage, new version
        dense = logits(model, ids)
        with packer.active():
            packed = logits(model, ids)
        assert torch.allclose(packed, dense, atol=1e-4, rtol=0)
    finally:
        with torch.no_grad():
            layer.weight.copy_(saved)


def test_gradients_take_the_dense_path(tiny: tuple[Any, Any]) -> None:
    model, _ = tiny
    packer = LinearPacker(model)
    layer = model.lm_head
    x = torch.randn(3, layer.in_features, requires_grad=True)
    with packer.active():
        out = layer(x)
        out.sum().backward()
    assert packer.packed_calls == 0
    assert x.grad is not None and x.grad.abs().sum() > 0


def test_engine_with_packed_layers_equals_dense_greedy(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    packer = LinearPacker(model)
    engine = DecodeEngine(
        model, tokenizer, threading.Lock(), PrefixStore(), 8, max_draft=0, packer=packer
    )
    ids = prompts(tokenizer)
    params = DecodeParams(max_new_tokens=10, logprobs=True)
    got = run_together(engine, [Request(i, params, greedy_choice) for i in ids])
    assert packer.packed_calls > 0
    for generation, prompt_ids in zip(got, ids, strict=True):
        expected = greedy(model, tokenizer, prompt_ids, params)[0]
        assert generation.token_ids == expected.token_ids
        for mine, theirs in zip(generation.steps, expected.steps, strict=True):
            assert mine.logprob == pytest.approx(theirs.logprob, abs=1e-4)


def test_pack_mode_and_budget(tiny: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    model, tokenizer = tiny
    monkeypatch.setenv(packing.PACK_ENV, "sometimes")
    with pytest.raises(ValueError, match="DOCKET_LOCAL_PACK='sometimes'"):
        pack_mode()
    monkeypatch.setenv(packing.PACK_ENV, "0")
    assert packer_for(model) is None
    engine = DecodeEngine(model, tokenizer, threading.Lock(), PrefixStore(max_tokens=0))
    assert engine.packer is None
    monkeypatch.delenv(packing.PACK_ENV)
    assert pack_mode() == "auto"
    need = LinearPacker(model).bytes()
    monkeypatch.setattr(packing, "available_memory", lambda: 2 * need - 1)
    assert packer_for(model) is None  # auto: the copy must fit in half the free memory
    monkeypatch.setattr(packing, "available_memory", lambda: 2 * need)
    assert packer_for(model) is not None
    assert packer_for(model, "1") is not None
    monkeypatch.setattr(packing, "available_memory", lambda: None)
    assert packer_for(model) is None
    assert packer_for(model, "1") is not None


def test_biased_layers_and_batched_inputs_equal_dense() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.Linear(40, 7, bias=False))
    with torch.no_grad():
        model[0].bias.uniform_(-3.0, 3.0)  # a bias the output cannot hide
    x = torch.randn(5, 3, 24)
    packer = LinearPacker(model)
    with torch.inference_mode():
        dense = model(x)
        dense_t = model(x.transpose(0, 1))  # a non-contiguous input
        with packer.active():
            packed = model(x)
            packed_t = model(x.transpose(0, 1))
    assert packer.packed_calls == 4
    assert packed.shape == dense.shape == (5, 3, 7)
    assert torch.allclose(packed, dense, atol=1e-5, rtol=0)
    assert torch.allclose(packed_t, dense_t, atol=1e-5, rtol=0)
