"""Log directories on the local disk or in an S3 store (`s3://bucket/prefix`).

Every docket command that reads or writes logs takes either. An S3 location is reached through
fsspec (s3fs) with the usual AWS settings: the endpoint from `AWS_ENDPOINT_URL` (any S3 server:
AWS, SeaweedFS, MinIO), credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` or a
profile. Inspect writes the logs there itself; docket reads them by downloading each log object
once (one GET, many in parallel) into a local folder and parsing the copy, which is much faster
than Inspect's remote reader (a new S3 client per call). `store_problem` is the preflight: one
line for a dead, unreachable or misconfigured store before anything runs.
"""

from __future__ import annotations

import re
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, overload

#: A location with a URL scheme (`s3://...`); `file://` is local.
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
#: The remote stores docket reads and writes (Inspect supports others; docket tests these).
SCHEMES = ("s3",)
#: Inspect names JSON logs `<ISO timestamp>_<task>_<id>.json`; other JSON files (eval-set.json,
#: logs.json, baselines) in a log directory are not logs.
JSON_LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T[^_]+_.+\.json$")
#: Seconds the preflight waits for the store to connect and to answer.
CONNECT_TIMEOUT = 5
READ_TIMEOUT = 15


class LogStoreError(ValueError):
    """A log location docket cannot use (one line naming it and why)."""


def scheme(location: str | Path) -> str | None:
    """The URL scheme of a remote location (`s3`), None for a local path (`file://` too).

    Args:
        location: A log directory or file.

    Returns:
        The scheme in lower case, or None.
    """
    found = _SCHEME.match(str(location))
    if found is None or found.group(1).lower() == "file":
        return None
    return found.group(1).lower()


def is_remote(location: str | Path) -> bool:
    """Whether `location` is in an object store (`s3://...`), not on the local disk."""
    return scheme(location) is not None


def check_scheme(location: str | Path) -> None:
    """Raise `LogStoreError` (one line) for a remote scheme docket does not support.

    Args:
        location: A log directory.
    """
    found = scheme(location)
    if found is not None and found not in SCHEMES:
        raise LogStoreError(
            f"{location}: log stores of scheme {found!r} are not supported (use a local folder "
            f"or {', '.join(s + '://bucket/prefix' for s in SCHEMES)})"
        )
    if found is not None and not _bucket_key(str(location))[0]:
        raise LogStoreError(f"{location}: no bucket named (expected s3://bucket/prefix)")


def resolve(location: str | Path) -> str:
    """`location` as docket names it: an absolute local path, or the URL without a trailing /.

    Args:
        location: A log directory or file, local or remote.

    Returns:
        The normalised location.
    """
    text = str(location)
    if is_remote(text):
        return text.rstrip("/")
    return str(Path(text.removeprefix("file://")).resolve())


@overload
def join(location: Path, *parts: str) -> Path: ...


@overload
def join(location: str, *parts: str) -> str | Path: ...


def join(location: str | Path, *parts: str) -> str | Path:
    """`location / part / ...`: a `Path` for a local location, a URL string for a remote one.

    Args:
        location: A directory, local or remote.
        *parts: Names below it.

    Returns:
        The joined location.
    """
    if is_remote(location):
        return "/".join([str(location).rstrip("/"), *(p.strip("/") for p in parts)])
    return Path(location).joinpath(*parts)


def name(location: str | Path) -> str:
    """The last part of a location's path (`prefix` of `s3://bucket/prefix/`)."""
    text = str(location).rstrip("/")
    found = _SCHEME.match(text)
    return PurePosixPath(text[found.end() :] if found else text).name


def relative(location: str, root: str) -> str:
    """`location` relative to `root` (both resolved the same way), with `/` separators.

    Args:
        location: A file under `root`.
        root: A directory.

    Returns:
        The relative path; `ValueError` when `location` is not under `root`.
    """
    if is_remote(root):
        prefix = root.rstrip("/") + "/"
        if not location.startswith(prefix):
            raise ValueError(f"{location} is not under {root}")
        return location[len(prefix) :]
    return Path(location).resolve().relative_to(Path(root).resolve()).as_posix()


def _bucket_key(location: str) -> tuple[str, str]:
    found = _SCHEME.match(location)
    rest = location[found.end() :] if found else location
    bucket, _, key = rest.partition("/")
    return bucket, key.strip("/")


def _filesystem(location: str) -> Any:
    from fsspec.core import url_to_fs

    fs, _ = url_to_fs(location)
    return fs


def _url(location: str, key: str) -> str:
    return f"{scheme(location)}://{key}"


def is_log_name(file_name: str) -> bool:
    """Whether a file name is an Inspect log's: `*.eval`, or an Inspect-named `*.json`."""
    return file_name.endswith(".eval") or bool(JSON_LOG_NAME.match(file_name))


def find_logs(location: str | Path) -> list[str]:
    """Every Inspect log under `location` (searched recursively), sorted.

    Args:
        location: A log directory, local or remote.

    Returns:
        Local paths or URLs; `FileNotFoundError` for a local directory that does not exist (a
        remote prefix without objects has no logs).
    """
    if not is_remote(location):
        root = Path(location)
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: log directory not found")
        found = [p for p in root.rglob("*") if p.is_file() and is_log_name(p.name)]
        return sorted(str(p) for p in found)
    text = str(location).rstrip("/")
    fs = _filesystem(text)
    fs.invalidate_cache()  # Inspect wrote through its own client: list afresh
    bucket, key = _bucket_key(text)
    base = f"{bucket}/{key}".rstrip("/")
    keys = fs.find(base, withdirs=False) if fs.exists(base) else []
    return sorted(_url(text, k) for k in keys if is_log_name(PurePosixPath(k).name))


def remove(location: str | Path) -> None:
    """Remove one file, local or remote; one already gone is not an error.

    Args:
        location: A local path or URL.
    """
    if not is_remote(location):
        Path(location).unlink(missing_ok=True)
        return
    fs = _filesystem(str(location))
    if fs.exists(str(location)):
        fs.rm(str(location))
    fs.invalidate_cache()


def has_files(location: str | Path) -> bool:
    """Whether a directory (local) or prefix (remote) holds any file.

    Args:
        location: A directory, local or remote.

    Returns:
        True when something was written below it.
    """
    if not is_remote(location):
        root = Path(location)
        return root.is_dir() and any(p.is_file() for p in root.rglob("*"))
    text = str(location).rstrip("/")
    bucket, key = _bucket_key(text)
    fs = _filesystem(text)
    fs.invalidate_cache()
    base = f"{bucket}/{key}".rstrip("/")
    return bool(fs.exists(base) and fs.find(base, maxdepth=None, withdirs=False))


def download(locations: list[str], root: str, into: Path) -> dict[str, Path]:
    """Copy remote files under `root` into `into`, keeping their paths below `root`.

    Args:
        locations: URLs under `root` (from `find_logs`).
        root: Their common directory (a URL).
        into: A local folder.

    Returns:
        Each URL's local copy. Transfers run concurrently (s3fs batches them).
    """
    if not locations:
        return {}
    copies = {loc: into / relative(loc, root) for loc in locations}
    for path in copies.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    fs = _filesystem(root)
    fs.get([_bucket_path(loc) for loc in copies], [str(p) for p in copies.values()])
    return copies


def _bucket_path(location: str) -> str:
    bucket, key = _bucket_key(location)
    return f"{bucket}/{key}"


def upload(local: Path, location: str) -> None:
    """Write the local file `local` to the remote `location` (one PUT: readers see the old or
    the new object, never a part).

    Args:
        local: A local file.
        location: Its remote destination.
    """
    _filesystem(location).put_file(str(local), _bucket_path(location))


@contextmanager
def local_copy(location: str) -> Iterator[Path]:
    """A local file holding `location`'s bytes: the file itself when local, else a download
    that is deleted afterwards.

    Args:
        location: A log file, local or remote.

    Yields:
        The local path.
    """
    if not is_remote(location):
        yield Path(location.removeprefix("file://"))
        return
    with tempfile.TemporaryDirectory(prefix="docket-log-") as folder:
        path = Path(folder) / name(location)
        _filesystem(location).get_file(_bucket_path(location), str(path))
        yield path


@contextmanager
def local_logs(location: str | Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A local folder with every log under `location`: the folder itself when local, else a
    temporary mirror of the store's logs (deleted afterwards).

    Args:
        location: A log directory, local or remote.

    Yields:
        The local folder, and each local copy's path mapped to its remote URL (empty when
        local).
    """
    if not is_remote(location):
        yield Path(location), {}
        return
    root = str(location).rstrip("/")
    with tempfile.TemporaryDirectory(prefix="docket-logs-") as folder:
        copies = download(find_logs(root), root, Path(folder))
        yield Path(folder), {str(path): url for url, path in copies.items()}


def store_problem(location: str | Path, write: bool = False) -> str | None:
    """The preflight: one line when `location` cannot be used as a log store, else None.

    A local location is always usable (its folder is created when written). An S3 location
    needs credentials, an endpoint that answers, an existing bucket and, with `write`, the
    right to write below the prefix (checked by writing and deleting one empty object).

    Args:
        location: A log directory, local or remote.
        write: Whether logs will be written (`docket suite`), not only read.

    Returns:
        E.g. `s3://b/p: log store not reachable at http://127.0.0.1:9 (AWS_ENDPOINT_URL):
        connection refused`, or None.
    """
    if not is_remote(location):
        return None
    try:
        check_scheme(location)
    except LogStoreError as error:
        return str(error)
    return _s3_problem(str(location).rstrip("/"), write)


def _s3_problem(location: str, write: bool) -> str | None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    bucket, key = _bucket_key(location)
    config = Config(
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        retries={"max_attempts": 1, "mode": "standard"},
    )
    try:  # a fresh session: the default one keeps the credentials it first resolved
        client = boto3.session.Session().client("s3", config=config)
    except (BotoCoreError, ValueError) as error:
        return f"{location}: log store misconfigured: {_one_line(error)}"
    endpoint = client.meta.endpoint_url
    where = f"{endpoint} (AWS_ENDPOINT_URL)" if "amazonaws.com" not in endpoint else endpoint
    try:
        client.head_bucket(Bucket=bucket)
        if write:
            probe = "/".join(p for p in (key, f".docket-write-check-{uuid.uuid4().hex}") if p)
            client.put_object(Bucket=bucket, Key=probe, Body=b"")
            client.delete_object(Bucket=bucket, Key=probe)
    except (NoCredentialsError, PartialCredentialsError):
        return (
            f"{location}: no AWS credentials for the log store (set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
        )
    except EndpointConnectionError:
        return f"{location}: log store not reachable at {where}: connection refused"
    except ClientError as error:
        return f"{location}: {_client_error(error, bucket, where, write)}"
    except BotoCoreError as error:
        return f"{location}: log store at {where} failed: {_one_line(error)}"
    return None


def _client_error(error: Any, bucket: str, where: str, write: bool) -> str:
    info = error.response.get("Error", {})
    code = str(info.get("Code", ""))
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in ("404", "NoSuchBucket"):
        return f"bucket {bucket!r} does not exist at {where} (create it first)"
    if code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        action = "write to" if write else "read"
        return (
            f"access denied: these credentials cannot {action} bucket {bucket!r} at {where} "
            "(check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
        )
    message = _one_line(info.get("Message") or code or error)
    return f"log store at {where} answered HTTP {status}: {message}"


def _one_line(value: object) -> str:
    lines = [line.strip() for line in str(value).splitlines() if line.strip()]
    return lines[0] if lines else type(value).__name__
