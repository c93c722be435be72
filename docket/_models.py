"""The `docket` model API: one Inspect provider that dispatches on the model name.

`--model docket/scripted -M policy=comply`, `--model docket/smollm2`,
`--model docket/local/PATH` (or `docket/local -M path=PATH`). Backends are imported only when
used, so a run on the scripted models never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from docket.core.inspect_private import PrerequisiteError

#: docket model kind -> "module:class" of its backend `ModelAPI`.
BACKENDS: dict[str, str] = {
    "scripted": "docket.agents.scripted.provider:ScriptedModelAPI",
    "smollm2": "docket.methods.local.provider:SmolLM2ModelAPI",
    "local": "docket.methods.local.provider:LocalHFModelAPI",
}


def _backend_class(kind: str) -> type[ModelAPI]:
    if kind not in BACKENDS:
        accepted = ", ".join(f"docket/{name}" for name in BACKENDS)
        raise PrerequisiteError(f"Unknown docket model 'docket/{kind}'; accepted: {accepted}")
    module_name, class_name = BACKENDS[kind].split(":")
    backend: type[ModelAPI] = getattr(importlib.import_module(module_name), class_name)
    return backend


class DocketModelAPI(ModelAPI):
    """Forwards every call to the backend chosen by the first segment of the model name."""

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
        backend_class = _backend_class(kind)
        try:
            self.backend = backend_class(
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
        """Generate with the backend."""
        return await self.backend.generate(input, tools, tool_choice, config)

    def max_tokens(self) -> int | None:
        """The backend's default max_tokens."""
        return self.backend.max_tokens()

    def max_connections(self) -> int:
        """The backend's concurrency."""
        return self.backend.max_connections()

    def connection_key(self) -> str:
        """Share connection limits per backend model."""
        return f"docket/{self.model_name}"

    def should_retry(self, ex: Exception) -> bool:
        """Retry only what the backend says is transient."""
        return bool(self.backend.should_retry(ex))

    async def aclose(self) -> None:
        """Release the backend."""
        await self.backend.aclose()


@modelapi(name="docket")
def docket_model_api() -> type[ModelAPI]:
    """Register the `docket` provider (imported lazily by Inspect)."""
    return DocketModelAPI
