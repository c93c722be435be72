"""`docket report --serve`: serve the report folder on localhost.

Inspect's log viewer bundle (`--bundle`) loads its logs with HTTP requests, which browsers block
for `file://` pages, so the bundle is blank when opened from disk; the leaderboard itself works
either way. This serves OUT with Python's standard HTTP server, bound to 127.0.0.1 only.
"""

from __future__ import annotations

from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class QuietHandler(SimpleHTTPRequestHandler):
    """Static files without a log line per request."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Stay quiet."""


def make_server(
    directory: str | Path, port: int = 0, host: str = "127.0.0.1"
) -> ThreadingHTTPServer:
    """An HTTP server for `directory` (port 0: any free port; see `server.server_address`).

    Args:
        directory: Folder served.
        port: Port to listen on; 0 picks a free one.
        host: Address to bind.

    Returns:
        The server, bound but not yet serving.
    """
    handler = partial(QuietHandler, directory=str(directory))
    return ThreadingHTTPServer((host, port), handler)


def url_of(server: ThreadingHTTPServer) -> str:
    """The server's base URL.

    Args:
        server: A server from `make_server`.

    Returns:
        `http://<host>:<port>/`.
    """
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}/"
