"""One warning line when a network model's call fails and Inspect retries it.

Inspect retries a failed model call with a growing backoff and logs each retry below the default
log level, so `inspect eval` against a dead port or a failing server prints nothing for minutes.
This hook (registered by docket's entry point, enabled when the `inspect eval` command line
names a network model) warns once per model and failure kind:

    openai/qwen: a call failed (APIConnectionError); Inspect retries it (retry 1, next in 3 s);
    `docket doctor --model openai/qwen` checks the endpoint in one line
"""

from __future__ import annotations

import logging

from inspect_ai.hooks import Hooks, ModelRetry, hooks

from docket import compatible, endpoints
from docket.check import one_line

logger = logging.getLogger(__name__)


def retry_line(data: ModelRetry) -> str:
    """The warning for one retry.

    Args:
        data: Inspect's retry event.

    Returns:
        One line: the model, the failure, the retry and the doctor command that checks it.
    """
    named = [m for m in compatible.COMMAND_LINE_MODELS if m.split("/", 1)[-1] == data.model_name]
    model = one_line(named[0] if named else data.model_name)
    kind = one_line(data.exception_type or "an error")
    status = f", HTTP {data.status_code}" if data.status_code else ""
    return (
        f"{model}: a call failed ({kind}{status}); Inspect retries it (retry {data.attempt}, "
        f"next in {data.wait_time:.0f} s); `docket doctor --model {model}` checks the endpoint "
        "in one line"
    )


@hooks(name="retry_notice", description="one warning when a network model's call is retried")
class RetryNotice(Hooks):
    """Warn once per (model, failure kind) when Inspect retries a model call."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str | None, int | None]] = set()

    def enabled(self) -> bool:
        """Only for runs whose command line names a network model."""
        return any(endpoints.is_network(m) for m in compatible.COMMAND_LINE_MODELS)

    async def on_model_retry(self, data: ModelRetry) -> None:
        """Warn on the first retry of each model and failure kind."""
        key = (data.model_name, data.exception_type, data.status_code)
        if key not in self.seen:
            self.seen.add(key)
            logger.warning(retry_line(data))
