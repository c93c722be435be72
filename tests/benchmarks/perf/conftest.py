"""The decoding tests' tiny checkpoints, which the GPU comparison script runs on a CPU."""

from __future__ import annotations

from tests.methods.decoding.conftest import target, tiny_llama_dir, toy_dir, vlm_dir

__all__ = ["target", "tiny_llama_dir", "toy_dir", "vlm_dir"]
