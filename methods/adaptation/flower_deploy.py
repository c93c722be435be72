"""Run a Flower app on the deployment engine with local processes: one SuperLink and N
SuperNodes on loopback, `flwr run` against them, everything stopped at the end.

This is the same topology as a real deployment (SuperNodes on other machines connect to the
SuperLink's address; `--node-config` tells each its partition), shrunk onto one host; used by
the FedPissa runner's `--engine deployment` and its test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

APP_DIR = Path(__file__).parent / "flower"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, deadline: float, process: subprocess.Popen[bytes]) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"flower: a process exited early with code {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"flower: nothing listens on 127.0.0.1:{port}")


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _stop(processes: list[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    """SIGTERM each process group we started, then SIGKILL what is left."""
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextmanager
def local_federation(
    work: Path, supernodes: int, *, partitions: int | None = None, start_timeout: float = 60.0
) -> Iterator[dict[str, Any]]:
    """Start a SuperLink and `supernodes` SuperNodes (partition-id 0..N-1) on 127.0.0.1 and
    yield the connection (`address`, `flwr_home`, `env`); stop them all on exit."""
    work.mkdir(parents=True, exist_ok=True)
    home = work / "flwr-home"
    home.mkdir(exist_ok=True)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "FLWR_HOME": str(home), "OMP_NUM_THREADS": "1", "PATH": path}
    link_port = free_port()
    processes: list[subprocess.Popen[bytes]] = []
    logs = []

    def spawn(name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = open(work / f"{name}.log", "wb")  # noqa: SIM115 - closed below
        logs.append(log)
        process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work, start_new_session=True
        )
        processes.append(process)
        return process

    try:
        link = spawn(
            "superlink",
            [
                _bin("flower-superlink"),
                "--insecure",
                "--host",
                "127.0.0.1",
                "--port",
                str(link_port),
            ],
        )
        deadline = time.monotonic() + start_timeout
        _wait_for_port(link_port, deadline, link)
        total = partitions or supernodes
        for index in range(supernodes):
            spawn(
                f"supernode-{index}",
                [
                    _bin("flower-supernode"),
                    "--insecure",
                    "--superlink",
                    f"127.0.0.1:{link_port}",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(free_port()),
                    "--node-config",
                    f"partition-id={index} num-partitions={total}",
                ],
            )
        (home / "config.toml").write_text(
            '[superlink]\ndefault = "docket-local"\n\n[superlink.docket-local]\n'
            f'address = "127.0.0.1:{link_port}"\ninsecure = true\n'
        )
        yield {
            "address": f"127.0.0.1:{link_port}",
            "flwr_home": str(home),
            "env": env,
            "processes": processes,
        }
    finally:
        _stop(processes)
        for log in logs:
            log.close()


def run_config_arg(settings: Mapping[str, Any]) -> str:
    """A `--run-config` string (`key=value` pairs; strings quoted as TOML)."""
    parts = []
    for key, value in settings.items():
        if isinstance(value, bool):
            parts.append(f"{key}={'true' if value else 'false'}")
        elif isinstance(value, int | float):
            parts.append(f"{key}={value}")
        else:
            parts.append(f"{key}={json.dumps(str(value))}")
    return " ".join(parts)


def flwr_run(
    federation: Mapping[str, Any],
    settings: Mapping[str, Any],
    *,
    timeout: float,
    app: Path = APP_DIR,
) -> subprocess.CompletedProcess[str]:
    """`flwr run APP docket-local --run-config ... --stream` until the run ends (or `timeout`)."""
    command = [
        _bin("flwr"),
        "run",
        str(app),
        "docket-local",
        "--run-config",
        run_config_arg(settings),
        "--stream",
    ]
    return subprocess.run(
        command,
        env=dict(federation["env"]),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
