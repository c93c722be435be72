"""Check a network model before a suite runs on it: one cheap call, one line when it fails.

`docket suite` calls `endpoint_problem` once per network model (the models under test and every
role's), so a dead or misconfigured server stops the suite with one line
("http://127.0.0.1:8765/v1: connection refused", "... HTTP 404: The model `x` does not exist")
instead of a run whose samples all time out. `reads_images` asks a network model about a small
solid-colour image before a vision task runs, so a text-only model never answers blind.
Local providers (docket's own, `hf`, `vllm`, ...) are not probed: they either load or fail with
their own error.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import zlib
from typing import Any

from inspect_ai.model import (
    ChatMessageUser,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
)

from docket.core.text import printable

#: Providers that run in this process (or start their own server): never probed.
LOCAL_PROVIDERS = frozenset(
    {
        "docket",
        "mockllm",
        "hf",
        "vllm",
        "sglang",
        "transformer_lens",
        "llama_cpp_python",
        "llama-cpp-python",
        "nnterp",
        "none",
    }
)

#: Seconds one probe call may take (the first call to a cold server can be slow).
PROBE_TIMEOUT = 60.0

#: The probe image's colour: a model that reads images names it.
PROBE_COLOUR = ("green", (0, 160, 0))


def is_network(model: str) -> bool:
    """Whether `model` (`provider/name`) is served over the network.

    Args:
        model: An Inspect model name.

    Returns:
        False for the providers in `LOCAL_PROVIDERS`, True otherwise.
    """
    return model.split("/", 1)[0] not in LOCAL_PROVIDERS


def where(model: Model) -> str:
    """The model's endpoint as the one-line messages name it (its base URL, else its name).

    Args:
        model: An Inspect model.

    Returns:
        The base URL the provider sends to, or `provider/name` when it uses its default.
    """
    base_url = getattr(model.api, "base_url", None)
    return str(base_url).rstrip("/") if base_url else str(model)


def _unwrap(error: BaseException) -> BaseException:
    """The underlying error of a tenacity `RetryError` (Inspect's retry wrapper)."""
    attempt = getattr(error, "last_attempt", None)
    if attempt is not None:
        inner = attempt.exception()
        if isinstance(inner, BaseException):
            return _unwrap(inner)
    return error


def _chain(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def server_reason(body: Any) -> str | None:
    """The server's own explanation from an error response body (OpenAI style or plain).

    Args:
        body: The decoded JSON body (or text) of an error response.

    Returns:
        Its `error.message` / `message` / `detail` / `error` text, or None.
    """
    if isinstance(body, str):
        return body.strip() or None
    if not isinstance(body, dict):
        return None
    for key in ("error", "message", "detail", "msg"):
        value = body.get(key)
        if isinstance(value, dict):
            inner = server_reason(value)
            if inner:
                return inner
        elif isinstance(value, str) and value.strip():
            return value.strip()
        elif isinstance(value, list) and value:
            return server_reason(value[0]) or str(value[0])
    return None


def _one_line(text: str) -> str:
    """The server's text on one line, its control characters (ESC, ...) shown as escapes."""
    return printable(" ".join(text.split()))


def error_line(error: BaseException, endpoint: str, model: str) -> str:
    """One line for a failed call: the endpoint and what went wrong, the server's reason first.

    Args:
        error: What the call raised (Inspect's retry wrapper is unwrapped).
        endpoint: The base URL (or model name) the call went to.
        model: The model's name, named for errors the server gives about it.

    Returns:
        E.g. `http://127.0.0.1:8765/v1: connection refused` or
        `http://127.0.0.1:8765/v1 (openai/nope): HTTP 404: The model nope does not exist`.
    """
    error = _unwrap(error)
    chain = _chain(error)
    status = next((s for e in chain if isinstance(s := getattr(e, "status_code", None), int)), None)
    if status is not None:
        reason = next((r for e in chain if (r := server_reason(getattr(e, "body", None)))), None)
        response = getattr(error, "response", None)
        if reason is None and response is not None:
            try:
                reason = server_reason(response.json())
            except Exception:  # noqa: BLE001 - a body that is not JSON
                reason = server_reason(getattr(response, "text", None))
        return f"{endpoint} ({model}): HTTP {status}: {_one_line(reason or str(error))}"
    if any(isinstance(e, ConnectionRefusedError) or "refused" in str(e).lower() for e in chain):
        return f"{endpoint}: connection refused"
    names = {type(e).__name__ for e in chain}
    if names & {"APITimeoutError", "TimeoutError", "TimeoutException", "ReadTimeout"}:
        return f"{endpoint}: no reply within the probe's {PROBE_TIMEOUT:g} s"
    if names & {"ConnectError", "APIConnectionError", "ConnectionError"}:
        deepest = next((str(e) for e in reversed(chain) if str(e).strip()), "")
        return f"{endpoint}: cannot connect ({_one_line(deepest) or 'no detail'})"
    text = _one_line(str(error)) or "no detail"
    return f"{endpoint} ({model}): {type(error).__name__}: {text}"


def _probe_config() -> GenerateConfig:
    return GenerateConfig(max_tokens=16, max_retries=0, timeout=int(PROBE_TIMEOUT))


def probe_args(model: str, args: dict[str, Any]) -> dict[str, Any]:
    """Model args for a probe: the OpenAI client's own retries off (one call, one answer).

    Args:
        model: The model's name (`provider/name`).
        args: Its `-M` args.

    Returns:
        `args`, with `max_retries=0` added for OpenAI-client providers that do not set it.
    """
    if model.split("/", 1)[0] in {"openai", "openai-api"} and "max_retries" not in args:
        return {**args, "max_retries": 0}
    return args


async def _probe(model: Model) -> str | None:
    try:
        await model.generate("Reply with the word OK.", config=_probe_config())
    except Exception as error:  # noqa: BLE001 - every failure becomes the one line
        return error_line(error, where(model), str(model))
    return None


def endpoint_problem(model: Model) -> str | None:
    """Call `model` once with a tiny request; the one-line problem, or None when it answered.

    Args:
        model: A network model (see `is_network`).

    Returns:
        None, or the line `error_line` writes.
    """
    return asyncio.run(_probe(model))


def _png(size: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour RGB PNG, `size` pixels square (written with zlib, no imaging library)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * size))
        + chunk(b"IEND", b"")
    )


def probe_image() -> str:
    """The probe image as a data URI (32 x 32 pixels of `PROBE_COLOUR`)."""
    data = base64.b64encode(_png(32, PROBE_COLOUR[1])).decode()
    return f"data:image/png;base64,{data}"


async def _reads_images(model: Model) -> bool:
    question = ChatMessageUser(
        content=[
            ContentText(text="What colour is this image? Answer with one word."),
            ContentImage(image=probe_image()),
        ]
    )
    try:
        output = await model.generate([question], config=_probe_config())
    except Exception as error:  # noqa: BLE001 - a server that refuses images
        status = getattr(_unwrap(error), "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            return False
        raise
    return PROBE_COLOUR[0] in output.completion.lower()


def reads_images(model: Model) -> bool:
    """Whether `model` reads images: it names the colour of a solid probe image.

    A text-only server that drops the image, or one that refuses it with a 4xx, reads none.

    Args:
        model: A network model.

    Returns:
        True when its reply names the probe's colour.
    """
    return asyncio.run(_reads_images(model))
