"""Tiny models run fastest on one thread (and do not fight a shared machine's other jobs)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True, scope="package")
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A toy mask predictor trained for a handful of steps by the shipped script."""
    from docket.methods.decoding.dsb.toy_mdlm.train import TrainConfig, train

    tiny = TrainConfig(
        steps=30, batch=8, hidden=32, layers=2, heads=2, mlp=64, warmup=5, lr=3e-3, log_every=10
    )
    return train(tmp_path_factory.mktemp("toy-mdlm"), tiny, log=lambda _: None)


@pytest.fixture(scope="session")
def target() -> Any:
    """A random 4-layer Llama (GQA) as a speculative-decoding target."""
    from docket.core.tiny_models import random_llama

    return random_llama(
        300,
        hidden=64,
        layers=4,
        heads=4,
        kv_heads=2,
        intermediate=128,
        max_position_embeddings=2048,
        eos_token_id=299,
        pad_token_id=0,
    ).eval()


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory, target: Any) -> Path:
    """`target` saved with a tokenizer whose ids fit its vocabulary."""
    from transformers import PreTrainedTokenizerFast

    from docket.methods.decoding.dsb.toy_mdlm.data import build_tokenizer

    path = tmp_path_factory.mktemp("dustin-target")
    target.save_pretrained(path)
    tokenizer = build_tokenizer()
    assert isinstance(tokenizer, PreTrainedTokenizerFast)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random LLaVA (4 x 4 image grid) with its processor."""
    from docket.core.tiny_models import build_tiny_vlm

    path = tmp_path_factory.mktemp("flash-vlm")
    return build_tiny_vlm(path, ["a red square on a white page"] * 4, image_size=64, patch_size=16)


@pytest.fixture(scope="session")
def vlm(vlm_dir: Path) -> Any:
    from docket.methods.local.loading import CheckpointSpec, load

    return load(CheckpointSpec(path=str(vlm_dir)))


@pytest.fixture(scope="session")
def toy_turns_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny toy mask predictor trained with few-shot preambles (turn-relative positions)."""
    from docket.methods.decoding.dsb.toy_mdlm.train import TrainConfig, train

    tiny = TrainConfig(
        steps=20, batch=4, hidden=32, layers=2, heads=2, mlp=64, warmup=5, preamble_shots=3
    )
    return train(tmp_path_factory.mktemp("toy-mdlm-turns"), tiny, log=lambda _: None)


@pytest.fixture(scope="session")
def prompt() -> list[int]:
    """Dustin's tests' random prompt of the tiny target (160 ids)."""
    from tests.methods.decoding.dustin_support import random_prompt

    return random_prompt()
