"""The `docket` model API: one Inspect provider that dispatches on the model name.

`--model docket/scripted -M policy=comply`, `--model docket/smollm2`, `--model docket/qwen`,
`--model docket/local/PATH` (or `docket/local -M path=PATH`). Backends are imported only when
used, so a run on the scripted models never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from docket.core.inspect_private import PrerequisiteError


def _scripted() -> type[ModelAPI]:
    from docket.agents.scripted.provider import ScriptedModelAPI

    return ScriptedModelAPI


def _smollm2() -> type[ModelAPI]:
    from docket.methods.local.provider import SmolLM2ModelAPI

    return SmolLM2ModelAPI


def _qwen() -> type[ModelAPI]:
    from docket.methods.local.provider import QwenModelAPI

    return QwenModelAPI


def _local() -> type[ModelAPI]:
    from docket.methods.local.provider import LocalHFModelAPI

    return LocalHFModelAPI


#: docket model kind -> the function importing its backend `ModelAPI` (on first use only).
BACKENDS: dict[str, Callable[[], type[ModelAPI]]] = {
    "scripted": _scripted,
    "smollm2": _smollm2,
    "qwen": _qwen,
    "local": _local,
}


def backend_class(kind: str) -> type[ModelAPI]:
    """The backend `ModelAPI` of a docket model kind, imported now.

    Args:
        kind: The first segment of the model name (`scripted`, `smollm2`, `qwen`, `local`).

    Returns:
        Its class.

    Raises:
        PrerequisiteError: An unknown kind (one line listing the accepted models).
    """
    if kind not in BACKENDS:
        accepted = ", ".join(f"docket/{name}" for name in BACKENDS)
        raise PrerequisiteError(f"Unknown docket model 'docket/{kind}'; accepted: {accepted}")
    return BACKENDS[kind]()


class DocketModelAPI(ModelAPI):
    """Forwards every call to the backend chosen by the first segment of the model name.

    Args:
        model_name: `scripted`, `smollm2`, `qwen`, `local/<path>` (what follows `docket/`).
        base_url: Passed to the backend.
        api_key: Passed to the backend.
        config: The run's generation config.
        **model_args: The backend's `-M` arguments.

    Raises:
        PrerequisiteError: An unknown model, or the backend refused its arguments (one line).
    """

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        **model_args: Any,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        kind = model_name.split("/", 1)[0]
        backend = backend_class(kind)
        try:
            self.backend = backend(
                model_name=model_name,
                base_url=base_url,
                api_key=api_key,
                config=config,
                **model_args,
            )
        except (ValueError, FileNotFoundError, TypeError) as ex:
            message = str(ex)
            if not message.startswith("docket/"):
                message = f"docket/{model_name}: {message}"
            raise PrerequisiteError(message) from None

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput | tuple[ModelOutput | Exception, Any]:
        """Generate with the backend.

        Args:
            input: The conversation so far.
            tools: The tools offered.
            tool_choice: Inspect's tool choice.
            config: The generation config.

        Returns:
            The backend's output (with its call record when it gives one).
        """
        return await self.backend.generate(input, tools, tool_choice, config)

    def max_tokens(self) -> int | None:
        """The backend's default max_tokens.

        Returns:
            What the backend says (None: no limit of its own).
        """
        return self.backend.max_tokens()

    def max_connections(self) -> int:
        """The backend's concurrency.

        Returns:
            The concurrent calls the backend allows.
        """
        return self.backend.max_connections()

    def connection_key(self) -> str:
        """Share connection limits per backend model.

        Returns:
            `docket/<model name>`.
        """
        return f"docket/{self.model_name}"

    def should_retry(self, ex: Exception) -> bool:
        """Retry only what the backend says is transient.

        Args:
            ex: The error of a call.

        Returns:
            The backend's answer.
        """
        return bool(self.backend.should_retry(ex))

    async def aclose(self) -> None:
        """Release the backend."""
        await self.backend.aclose()


@modelapi(name="docket")
def docket_model_api() -> type[ModelAPI]:
    """Register the `docket` provider (imported lazily by Inspect).

    Returns:
        `DocketModelAPI`.
    """
    return DocketModelAPI
