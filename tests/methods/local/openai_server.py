"""A reusable OpenAI-compatible server on 127.0.0.1: `transformers serve` with docket/qwen.

Use the session fixture from any test module (it starts one server per test session):

    from tests.methods.local.openai_server import OpenAIServer, qwen_server  # noqa: F401

    def test_x(qwen_server: OpenAIServer) -> None:
        eval("docket/smoke", model=qwen_server.model, model_base_url=qwen_server.base_url, ...)

The server reads the dequantised copy of the embedded Qwen2.5-Coder-0.5B GGUF from docket's cache
(written first in a subprocess if missing, so the test process never holds the weights), and its
environment variables for Inspect's `openai-api/<service>/<model>` provider are in `env`. The
fixture skips when the weights are not installed (`make` installs them).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The `openai-api` service name: Inspect reads TSERVE_BASE_URL and TSERVE_API_KEY.
SERVICE = "tserve"
STARTUP_SECONDS = 600

_PREPARE = """
from docket.methods.local.embedded import QWEN, assembled
from docket.methods.local.loading import CheckpointSpec, gguf_cache_dir, load
gguf = assembled(QWEN)
spec = CheckpointSpec(str(gguf.parent), gguf_file=gguf.name)
folder = gguf_cache_dir(spec)
if folder is None or not (folder / "config.json").is_file():
    load(spec)
print(gguf_cache_dir(spec))
"""


@dataclass(frozen=True)
class OpenAIServer:
    """A running OpenAI-compatible server.

    Attributes:
        base_url: `http://127.0.0.1:PORT/v1`.
        model: The Inspect model name (`openai-api/tserve/<checkpoint folder>`).
        env: The environment variables the `openai-api` provider reads.
        log: The server's output file.
    """

    base_url: str
    model: str
    env: dict[str, str]
    log: Path


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def qwen_checkpoint() -> Path:
    """docket/qwen's dequantised copy (written by a subprocess when missing); skips the test
    when the weights are not installed."""
    done = subprocess.run(
        [sys.executable, "-c", _PREPARE], capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        if "is not installed" in last:
            pytest.skip(last)
        raise RuntimeError(f"preparing docket/qwen's checkpoint failed: {last}")
    return Path(done.stdout.strip().splitlines()[-1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    """Poll `url` until it answers 200; fail with the server's last line if it exits or hangs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = (log.read_text(errors="replace").strip().splitlines() or ["?"])[-1]
            raise RuntimeError(f"transformers serve exited ({process.returncode}): {tail}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(2)
    raise RuntimeError(f"transformers serve did not answer {url} within {seconds:.0f} s")


@pytest.fixture(scope="session")
def qwen_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAIServer]:
    """`transformers serve` on 127.0.0.1 with docket/qwen's checkpoint, for the whole session."""
    checkpoint = qwen_checkpoint()
    port = free_port()
    log = tmp_path_factory.mktemp("tserve") / "server.log"
    executable = Path(sys.executable).with_name("transformers")
    command = [str(executable), "serve", checkpoint.name, "--host", "127.0.0.1"]
    command += ["--port", str(port), "--device", "cpu", "--dtype", "float32"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=checkpoint.parent,  # the model id is the folder's name, a path relative to here
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health", process, log, STARTUP_SECONDS)
        base_url = f"http://127.0.0.1:{port}/v1"
        env = {f"{SERVICE.upper()}_BASE_URL": base_url, f"{SERVICE.upper()}_API_KEY": "unused"}
        yield OpenAIServer(base_url, f"openai-api/{SERVICE}/{checkpoint.name}", env, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
