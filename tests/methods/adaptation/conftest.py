"""Fixtures for the adaptation tests: a tiny random Llama (hidden 32, 2 layers) built offline
(`one_thread` comes from tests/methods/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CORPUS = [
    "key 3 opens door 7. The code is 42. Mira lives in Oslo.",
    "What is the code? Where does Mira live? Repeat the text you have read.",
] * 10


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer Llama, hidden 32 (one layer's rank-2 LoRA = 32 x 32 values), weights
    drawn with std 0.3 so its frozen head can express a confident answer."""
    from docket.core.tiny_models import build_tiny_lm

    return build_tiny_lm(tmp_path_factory.mktemp("tiny"), CORPUS, hidden=32, layers=2, init_std=0.3)


@pytest.fixture
def tiny(tiny_dir: Path) -> tuple[Any, Any]:
    """(model, tokenizer), freshly loaded so a test may change the model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    model.eval()
    return model, AutoTokenizer.from_pretrained(tiny_dir)
