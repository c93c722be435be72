"""`openai/` models on OpenAI-compatible servers: requests shaped as a plain chat model's.

Inspect takes an `openai/` name it does not know (`openai/qwen`) for an unreleased frontier
model: it calls the Responses API (`POST /v1/responses`, which most compatible servers lack),
sends the system prompt as a `developer` message, drops `temperature` and renames `max_tokens`.
Registering a plain chat family for the name (Inspect's `set_model_info`) makes Inspect send
chat completions with `system`/`user` roles and `max_tokens` instead.

`docket suite` registers its own models; `docket._registry` (Inspect's entry point, loaded
before Inspect builds the first model of any run) registers the models of the `inspect eval` /
`inspect eval-set` command line that loaded it (or of the logs `inspect eval-retry` retries),
so the plain line works too:

    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 inspect eval docket/smoke --model openai/qwen
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

#: Hosts of OpenAI's own API (where the Responses API exists).
OPENAI_HOSTS = ("api.openai.com",)

#: The request shape an `openai/` model off OpenAI's servers gets (Inspect's `ModelInfo.family`):
#: a plain chat model. Unregistered, Inspect takes an unknown name (`qwen2.5-coder-...`) for an
#: unreleased frontier model and sends system prompts as `developer` messages, drops
#: `temperature` and renames `max_tokens`, which compatible servers do not expect.
COMPATIBLE_FAMILY = "gpt-4.1"

#: The Inspect commands whose `--model`, `--model-base-url`, `-M` and `--model-role` name the
#: models of the run that loads docket's entry point.
EVAL_COMMANDS = ("eval", "eval-set")


def off_openai(model: str, base_url: str | None = None) -> bool:
    """Whether `model` is an `openai/` model on a server other than OpenAI's.

    Args:
        model: An Inspect model name (`openai/qwen`).
        base_url: Its base URL (None: `OPENAI_BASE_URL`, else OpenAI's own).

    Returns:
        True for an `openai/` model whose URL names another host.
    """
    if not model.startswith("openai/"):
        return False
    url = base_url or os.environ.get("OPENAI_BASE_URL")
    return bool(url) and not any(host in str(url) for host in OPENAI_HOSTS)


def plain_chat_shape(model: str, base_url: str | None = None) -> bool:
    """Make Inspect shape an off-OpenAI `openai/` model's requests as a plain chat model's.

    Registers `COMPATIBLE_FAMILY` as the model's family (`set_model_info`) unless Inspect
    already knows the name (a family the user registered, or a real OpenAI model name).

    Args:
        model: An Inspect model name.
        base_url: Its base URL (None: `OPENAI_BASE_URL`).

    Returns:
        Whether the family was registered now.
    """
    from inspect_ai.model import ModelInfo, set_model_info

    from docket.core.inspect_private import model_info_direct

    if not off_openai(model, base_url) or model_info_direct(model) is not None:
        return False
    set_model_info(model, ModelInfo(family=COMPATIBLE_FAMILY))
    return True


def _names(value: Any) -> Iterator[tuple[str, str | None]]:
    """(model, base_url) pairs of a `--model` value or one `--model-role` binding."""
    if isinstance(value, str):
        for name in value.split(","):
            yield name.strip(), None
    elif isinstance(value, list):
        for item in value:
            yield from _names(item)
    elif isinstance(value, dict) and isinstance(value.get("model"), str):
        args = value.get("model_args")
        url = args.get("base_url") if isinstance(args, dict) else None
        yield value["model"], url if isinstance(url, str) else None


def command_line_models(params: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The models an `inspect eval` command line names, each with the base URL it gives.

    Args:
        params: The parsed options of Inspect's `eval` command (click's `ctx.params`):
            `model`, `model_base_url`, `m` (the `-M` pairs) and `model_role`.

    Returns:
        (model, base_url or None) for the models under test and every `--model-role` model.
    """
    from docket.core.inspect_private import parse_cli_args

    args = parse_cli_args(params.get("m") or ())
    url = params.get("model_base_url") or args.get("base_url")
    url = url if isinstance(url, str) else None
    found = [(name, url) for name, _ in _names(params.get("model") or "")]
    roles = parse_cli_args(params.get("model_role") or (), force_str=False)
    found.extend(pair for value in roles.values() for pair in _names(value))
    return [(name, base) for name, base in found if name]


def retried_models(log_files: tuple[str, ...] | list[str]) -> list[tuple[str, str | None]]:
    """The models `inspect eval-retry LOG...` builds again: each log's model and role models.

    Args:
        log_files: The logs to retry (a log that cannot be read is skipped: Inspect says why).

    Returns:
        (model, base_url or None) pairs.
    """
    from inspect_ai.log import read_eval_log

    found: list[tuple[str, str | None]] = []
    for path in log_files:
        try:
            spec = read_eval_log(path, header_only=True).eval
        except Exception:  # noqa: BLE001 - Inspect names the unreadable log itself
            continue
        url = spec.model_base_url or spec.model_args.get("base_url")
        found.append((spec.model, url if isinstance(url, str) else None))
        for value in (spec.model_roles or {}).values():
            configs = value if isinstance(value, list) else [value]
            found.extend((c.model, c.base_url) for c in configs)
    return found


#: The models of the `inspect eval` command line that loaded docket (set by
#: `shape_command_line_models`; `docket.retry_notice` is enabled when one is a network model).
COMMAND_LINE_MODELS: list[str] = []


def shape_command_line_models() -> list[str]:
    """Give the models of the running `inspect eval` command the plain chat shape.

    Called when Inspect loads docket's entry point, which it does before it builds the first
    model of a run. Never raises: a command line this cannot read is left to Inspect, which
    says what is wrong with it.

    Returns:
        The model names registered now.
    """
    try:
        import click

        context = click.get_current_context(silent=True)
        if context is not None and context.command.name in EVAL_COMMANDS:
            pairs = command_line_models(context.params)
        elif context is not None and context.command.name == "eval-retry":
            pairs = retried_models(context.params.get("log_files") or ())
        else:
            pairs = [(name, None) for name, _ in _names(os.environ.get("INSPECT_EVAL_MODEL", ""))]
        COMMAND_LINE_MODELS[:] = [name for name, _ in pairs]
        return [name for name, url in pairs if plain_chat_shape(name, url)]
    except Exception:  # noqa: BLE001 - an entry point that raises loses every docket task
        return []
