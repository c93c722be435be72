"""A real two-node Ray cluster on this machine for the `--executor ray` tests, not a mock.

`two_node_cluster` starts a head (`ray start --head`) and a second node (`ray start
--address=...`), each with one CPU, a small object store, no dashboard, free ports and a
temporary folder of its own, so the tests share nothing with another Ray on the machine. The
worker node can be killed (its raylet and every process under it, SIGKILL: the node is lost
mid-run), and teardown kills every process of this cluster by id (`ray stop` would stop every
Ray on the machine). Without Ray the tests are skipped with one line; with `CI=true` that line
fails them instead.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

#: Seconds `ray start` may take on a loaded machine.
START_TIMEOUT_S = 120


def ray_binary() -> str | None:
    """The `ray` command next to this Python (the venv's), else on PATH."""
    beside = Path(sys.executable).parent / "ray"
    return str(beside) if beside.exists() else shutil.which("ray")


def require_ray() -> str:
    """The `ray` command, or skip (fail under `CI=true`) with one line."""
    found = ray_binary()
    try:
        import ray  # noqa: F401
    except ImportError:
        found = None
    if found is None:
        reason = "ray is not installed (pip install 'docket[ray]')"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Ray executor tests: {reason}", pytrace=False)
        pytest.skip(reason)
    return found


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _children() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        found.setdefault(parent, []).append(int(entry.name))
    return found


def _tree(roots: list[int]) -> list[int]:
    """`roots` and every process under them."""
    children = _children()
    seen: list[int] = []
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid not in seen:
            seen.append(pid)
            stack.extend(children.get(pid, []))
    return seen


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class RayCluster:
    """A running two-node cluster: its head's address and its two raylets."""

    address: str
    temp_dir: Path
    head_port: int
    worker_port: int
    env: dict[str, str]

    def raylet(self, node_manager_port: int) -> tuple[int, str]:
        """(pid, node id) of the raylet listening on `node_manager_port`."""
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                line = _cmdline(int(entry.name))
                if "raylet/raylet" in line and f"--node_manager_port={node_manager_port} " in line:
                    found = re.search(r"--node_id=(\w+)", line)
                    return int(entry.name), found.group(1) if found else ""
        raise AssertionError(f"no raylet on port {node_manager_port}")

    @property
    def worker_node(self) -> str:
        """The second node's id."""
        return self.raylet(self.worker_port)[1]

    @property
    def head_node(self) -> str:
        """The head's node id."""
        return self.raylet(self.head_port)[1]

    def kill_worker_node(self) -> list[int]:
        """SIGKILL the second node's raylet and every process under it (its workers, agents).

        Returns:
            The processes killed.
        """
        pid, _ = self.raylet(self.worker_port)
        victims = _tree([pid])
        _kill(victims)
        return victims

    def processes(self) -> list[int]:
        """Every process of this cluster: those naming its folder, and all under them."""
        # the folder, or the head's GCS port after any address (Ray may name the host's IP)
        port = self.address.rsplit(":", 1)[1]
        mark = re.compile(rf"{re.escape(str(self.temp_dir))}|[\d.]+:{port}\b")
        roots = [
            int(e.name)
            for e in Path("/proc").iterdir()
            if e.name.isdigit()
            and int(e.name) != os.getpid()
            and mark.search(_cmdline(int(e.name)))
        ]
        return _tree(roots)

    def stop(self) -> None:
        """Kill every process of this cluster, by id."""
        for _ in range(3):
            pids = self.processes()
            if not pids:
                return
            _kill(pids)
            time.sleep(0.5)


@contextmanager
def two_node_cluster(env: dict[str, str] | None = None) -> Iterator[RayCluster]:
    """A head and a second node, one CPU each, on 127.0.0.1, for the block.

    Args:
        env: The nodes' environment (their workers inherit it; default: this process's).

    Yields:
        The cluster; every process of it is killed afterwards, whatever happened.
    """
    ray = require_ray()
    folder = Path(tempfile.mkdtemp(prefix="docket-ray-"))
    environ = {**(env or os.environ), "RAY_USAGE_STATS_ENABLED": "0"}
    head, worker = free_port(), free_port()
    cluster = RayCluster(f"127.0.0.1:{free_port()}", folder, head, worker, environ)
    port = int(cluster.address.rsplit(":", 1)[1])
    common = ["--num-cpus=1", "--object-store-memory=80000000", "--disable-usage-stats"]
    common += ["--node-ip-address=127.0.0.1"]

    def node_ports(manager: int) -> list[str]:
        return [
            f"--node-manager-port={manager}",
            f"--object-manager-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
        ]

    starts = [
        [ray, "start", "--head", f"--port={port}", f"--temp-dir={folder}"]
        + ["--include-dashboard=false", f"--dashboard-port={free_port()}"]
        + [f"--ray-client-server-port={free_port()}", *node_ports(head), *common],
        [ray, "start", f"--address={cluster.address}", *node_ports(worker), *common],
    ]
    try:
        for command in starts:
            done = subprocess.run(
                command, env=environ, capture_output=True, text=True, timeout=START_TIMEOUT_S
            )
            assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
