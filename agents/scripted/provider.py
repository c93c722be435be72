"""`ScriptedModelAPI`: deterministic reference models, offline, with token usage.

Selected as `--model docket/scripted -M policy=NAME [-M arg=value ...]`.
"""

from __future__ import annotations

import re
from itertools import count
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo

from docket.agents.scripted.policy import PolicyInput, PolicyReply, get_policy
from docket.core.options import converted

_TOKEN = re.compile(r"\w+|[^\w\s]")
_call_ids = count(1)


def count_tokens(text: str) -> int:
    """Deterministic token count: words and punctuation marks.

    Args:
        text: The text counted.

    Returns:
        The number of words and punctuation marks in `text`.
    """
    return len(_TOKEN.findall(text))


def _message_text(message: ChatMessage) -> str:
    text = message.text
    if isinstance(message, ChatMessageAssistant) and message.tool_calls:
        text += " ".join(f"{c.function} {c.arguments}" for c in message.tool_calls)
    return text


class ScriptedModelAPI(ModelAPI):
    """A model whose every reply is computed by a registered scripted policy.

    Args:
        model_name: The model's name.
        base_url: Passed on to Inspect's `ModelAPI`; the scripted model calls no server.
        api_key: Passed on to Inspect's `ModelAPI`; no key is needed.
        config: Generation config of the eval.
        **model_args: The `-M` options: `policy` (required) names the policy, the others are
            that policy's declared arguments, each converted to its declared type.
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
        name = str(model_args.pop("policy", "") or "")
        if not name:
            raise ValueError("docket/scripted needs -M policy=NAME (e.g. refuse, comply)")
        self.policy = get_policy(name)
        unknown = sorted(set(model_args) - set(self.policy.args))
        if unknown:
            accepted = ", ".join(["policy", *self.policy.args]) or "policy"
            raise ValueError(
                f"policy={name} does not take -M {', '.join(unknown)}; accepted: {accepted}"
            )
        self.policy_args = {key: self._coerce(key, value) for key, value in model_args.items()}

    def _coerce(self, key: str, value: Any) -> Any:
        """`value` as the type policy declares for `-M key`, or one clear error."""
        return converted(f"policy={self.policy.name}", key, value, self.policy.args[key])

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Run the policy on the conversation and wrap its reply as a `ModelOutput`.

        Args:
            input: The conversation so far.
            tools: Tools offered to the model (none are shown to the policy when `tool_choice` is
                "none").
            tool_choice: Inspect's tool choice for this call.
            config: Generation config of the call (the policy reads e.g. `logprobs`).

        Returns:
            The policy's reply as one choice, with its tool calls, logprobs and token usage.
        """
        offered = [] if tool_choice == "none" else tools
        state = PolicyInput(messages=input, tools=offered, config=config, args=self.policy_args)
        reply = self.policy.fn(state)
        return self._to_output(reply, input)

    def _to_output(self, reply: PolicyReply, input: list[ChatMessage]) -> ModelOutput:
        tool_calls = [
            ToolCall(id=f"scripted_{next(_call_ids)}", function=r.function, arguments=r.arguments)
            for r in reply.tool_calls
        ]
        message = ChatMessageAssistant(
            content=reply.text,
            tool_calls=tool_calls or None,
            model=self.model_name,
            source="generate",
        )
        input_tokens = sum(count_tokens(_message_text(m)) for m in input)
        output_tokens = count_tokens(_message_text(message)) or 1
        return ModelOutput(
            model=f"scripted/{self.policy.name}",
            choices=[
                ChatCompletionChoice(
                    message=message,
                    stop_reason="tool_calls" if tool_calls else "stop",
                    logprobs=reply.logprobs,
                )
            ],
            usage=ModelUsage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                total_tokens=input_tokens + output_tokens,
            ),
        )

    def max_tokens(self) -> int | None:
        """Scripted replies are short; no provider limit applies.

        Returns:
            None.
        """
        return None

    def max_connections(self) -> int:
        """Pure Python and instant: allow plenty of concurrency.

        Returns:
            64.
        """
        return 64
