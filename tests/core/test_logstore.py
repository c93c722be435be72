"""`docket.core.logstore`: local and S3 locations named the same way, logs found and copied on a
real S3 gateway (SeaweedFS, `tests/s3_support.py`), and a dead or misconfigured store as one
line."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from docket.core import logstore
from tests.fake_openai import closed_port
from tests.s3_support import S3Store


def test_locations_join_and_name_alike_locally_and_remotely(tmp_path: Path) -> None:
    assert logstore.join(tmp_path, "a", "b") == tmp_path / "a" / "b"
    assert logstore.join("s3://bucket/runs/", "docket_smoke", "s") == (
        "s3://bucket/runs/docket_smoke/s"
    )
    assert logstore.resolve("s3://bucket/runs/") == "s3://bucket/runs"
    assert logstore.resolve(f"file://{tmp_path}/x") == str(tmp_path / "x")
    assert logstore.name("s3://bucket/runs/") == "runs" and logstore.name(tmp_path) == tmp_path.name
    assert logstore.relative("s3://b/p/t/s/x.eval", "s3://b/p") == "t/s/x.eval"
    assert logstore.is_remote("S3://b/p") and not logstore.is_remote(f"file://{tmp_path}")
    with pytest.raises(ValueError, match="is not under"):
        logstore.relative("s3://b/q/x.eval", "s3://b/p")


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("gs://b/p", "log stores of scheme 'gs' are not supported (use a local folder or s3://"),
        ("s3:///p", "no bucket named (expected s3://bucket/prefix)"),
    ],
)
def test_an_unsupported_location_is_one_line(location: str, message: str) -> None:
    assert str(logstore.store_problem(location)).startswith(f"{location}: {message}")


def test_a_local_location_needs_no_preflight(tmp_path: Path) -> None:
    assert logstore.store_problem(tmp_path / "new", write=True) is None


def test_a_dead_endpoint_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    assert logstore.store_problem("s3://b/p", write=True) == (
        f"s3://b/p: log store not reachable at {url} (AWS_ENDPOINT_URL): connection refused"
    )


def test_a_store_without_the_bucket_or_keys_is_one_line(
    s3_env: S3Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = f"{s3_env.endpoint} (AWS_ENDPOINT_URL)"
    assert logstore.store_problem("s3://no-such-bucket/p") == (
        f"s3://no-such-bucket/p: bucket 'no-such-bucket' does not exist at {where} "
        "(create it first)"
    )
    assert logstore.store_problem(s3_env.url(), write=True) is None
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    line = logstore.store_problem(s3_env.url("p"), write=True)
    assert line == (
        f"s3://{s3_env.bucket}/p: access denied: these credentials cannot write to bucket "
        f"'{s3_env.bucket}' at {where} (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
    )


def test_logs_are_found_copied_and_written_back_on_the_store(
    s3_env: S3Store, tmp_path: Path
) -> None:
    root = s3_env.url()
    client = boto3.session.Session().client("s3")
    prefix = root.removeprefix(f"s3://{s3_env.bucket}/")
    names = {
        "t/s/a.eval": b"first",
        "t/s/2026-01-01T00-00-00+00-00_x_abc.json": b"{}",
        "t/s/logs.json": b"{}",  # Inspect's manifest, not a log
        "t/eval-set.json": b"{}",
    }
    for key, body in names.items():
        client.put_object(Bucket=s3_env.bucket, Key=f"{prefix}/{key}", Body=body)
    found = logstore.find_logs(root)
    assert found == [
        f"{root}/t/s/2026-01-01T00-00-00+00-00_x_abc.json",
        f"{root}/t/s/a.eval",
    ]
    assert logstore.has_files(root) and not logstore.has_files(s3_env.url())
    assert logstore.find_logs(s3_env.url()) == []
    with logstore.local_logs(root) as (folder, urls):
        copies = {urls[str(p)]: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert copies == {f"{root}/t/s/a.eval": b"first", found[0]: b"{}"}
    with logstore.local_copy(found[1]) as path:
        assert path.read_bytes() == b"first"
        path.write_bytes(b"second")
        logstore.upload(path, found[1])
    body = client.get_object(Bucket=s3_env.bucket, Key=f"{prefix}/t/s/a.eval")["Body"].read()
    assert body == b"second"
