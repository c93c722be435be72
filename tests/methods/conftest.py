"""Fixtures shared by the methods tests: offline Hugging Face, and training on one thread."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from docket.core.tiny_models import torch_threads

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Train on one CPU thread: small ops run faster and it is kind to a shared machine."""
    with torch_threads(1):
        yield
