"""A tiny OpenAI-compatible chat-completions server in a thread, for suite and endpoint tests.

It answers `POST /v1/chat/completions` with whatever `respond` returns for the request body
(a status and a JSON body), ignores images (a text-only server), and records every request, so
a test can assert what each call carried (its `max_tokens`, its messages).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, Any]]


def completion(text: str, model: str = "fake") -> dict[str, Any]:
    """A chat-completions response body with one choice of `text`."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }


def tool_call_completion(
    calls: list[tuple[str, dict[str, Any]]], model: str = "fake"
) -> dict[str, Any]:
    """A chat-completions response body whose one choice carries structured tool calls.

    Args:
        calls: (function name, arguments) of each call.
        model: The model name the body reports.

    Returns:
        The body, `finish_reason` `tool_calls`.
    """
    body = completion("", model)
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(calls)
    ]
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def chat_only(respond: Callable[[dict[str, Any]], Reply]) -> Callable[[dict[str, Any]], Reply]:
    """`respond` behind a strict compatible server's checks (llama.cpp's, vLLM's).

    Any path but `/chat/completions` (the Responses API among them) is a 404, and a request
    with a `developer`-role message is a 500, as llama.cpp's server answers one.

    Args:
        respond: What the server answers a well-formed chat-completions request.

    Returns:
        The checked responder.
    """

    def checked(request: dict[str, Any]) -> Reply:
        if not str(request.get("_path", "")).endswith("/chat/completions"):
            return 404, error_body(f"File Not Found: {request.get('_path')}", "not_found_error")
        roles = [m.get("role") for m in request.get("messages") or []]
        if "developer" in roles:
            return 500, error_body("Unsupported role: developer", "server_error")
        return respond(request)

    return checked


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI-style error body carrying the server's reason."""
    return {"error": {"message": message, "type": kind, "code": None}}


def prompt_text(request: dict[str, Any]) -> str:
    """Every text part of a chat-completions request's messages, joined."""
    parts: list[str] = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


def has_image(request: dict[str, Any]) -> bool:
    """Whether a request carries an image part."""
    return any(
        isinstance(p, dict) and p.get("type") == "image_url"
        for m in request.get("messages") or []
        if isinstance(m.get("content"), list)
        for p in m["content"]
    )


@dataclass
class FakeServer:
    """The running server: its base URL and the request bodies it received."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    def chats(self) -> list[dict[str, Any]]:
        """The chat-completions requests (not other paths)."""
        return [r for r in self.requests if r.get("_path", "").endswith("/chat/completions")]


@contextmanager
def fake_openai(
    respond: Callable[[dict[str, Any]], Reply], delay: Callable[[dict[str, Any]], float] | None
) -> Iterator[FakeServer]:
    """Serve `respond` on 127.0.0.1 (a free port) while the block runs.

    Args:
        respond: Maps a request body to (status, JSON body).
        delay: Seconds to wait before answering a request (None: answer at once).

    Yields:
        The server (`base_url` ends in `/v1`).
    """
    server_state: FakeServer | None = None

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            return

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            body["_path"] = self.path
            assert server_state is not None
            server_state.requests.append(body)
            if delay is not None:
                time.sleep(delay(body))
            status, reply = respond(body)
            data = json.dumps(reply).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (a time limit): nothing to answer
                return

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            return  # a hung-up client is the test's point, not a server failure

    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server_state = FakeServer(base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
