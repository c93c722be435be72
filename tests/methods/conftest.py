"""Fixtures shared by the methods tests: offline Hugging Face, and training on one thread."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Train on one CPU thread: small ops run faster and it is kind to a shared machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
