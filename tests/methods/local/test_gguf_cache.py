"""docket's dequantised GGUF copy on SmolLM2: a complete config (architectures set), tied weights
stored once, its size printed, and a versioned key so copies in an older layout are rebuilt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from docket.methods.local import loading
from docket.methods.local.provider import smollm2_gguf


@pytest.fixture(scope="module")
def smollm2_spec() -> loading.CheckpointSpec:
    try:
        gguf = smollm2_gguf()
    except ValueError as ex:
        pytest.skip(str(ex))
    return loading.CheckpointSpec(str(gguf.parent), gguf_file=gguf.name)


def test_cache_key_carries_the_layout_version(
    smollm2_spec: loading.CheckpointSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path))
    folder = loading.gguf_cache_dir(smollm2_spec)
    assert folder is not None and folder.name.endswith(f"-float32-v{loading.GGUF_CACHE_VERSION}")
    assert loading.GGUF_CACHE_VERSION == 2  # 1 wrote architectures: null and lm_head twice
    old = folder.with_name(folder.name.removesuffix(f"-v{loading.GGUF_CACHE_VERSION}"))
    old.mkdir(parents=True)
    (old / "config.json").write_text(json.dumps({"architectures": None}))
    assert loading.gguf_cache_dir(smollm2_spec) == folder  # the old copy is not read


def test_copy_is_complete_tied_once_and_reloads_identically(
    smollm2_spec: loading.CheckpointSpec, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import torch
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    original = loading.load(smollm2_spec)  # the same process cache as docket/smollm2's tests
    target = tmp_path / "copy"
    loading._save_copy(original, target)
    assert f"docket: wrote the dequantised copy to {target} (0.54 GB)" in capfd.readouterr().err
    config = json.loads((target / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"]
    assert "quantization_config" not in config
    assert AutoConfig.from_pretrained(target).architectures == ["LlamaForCausalLM"]
    with safe_open(str(target / "model.safetensors"), "pt") as weights:
        names = set(weights.keys())
    assert "lm_head.weight" not in names and "model.embed_tokens.weight" in names
    parameters = sum(p.numel() for p in original.model.parameters())  # tied ones counted once
    assert (target / "model.safetensors").stat().st_size < parameters * 4 + 100_000
    assert (target / "generation_config.json").is_file()
    copy = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(target)
    output: Any = copy.get_output_embeddings()
    embedding: Any = copy.get_input_embeddings()
    assert output.weight.data_ptr() == embedding.weight.data_ptr()  # tied back on load
    ids = original.tokenizer("What is 2+2?", return_tensors="pt").input_ids
    assert tokenizer("What is 2+2?", return_tensors="pt").input_ids.tolist() == ids.tolist()
    with torch.no_grad():
        assert torch.equal(original.model(ids).logits, copy(ids).logits)
