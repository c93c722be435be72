"""Inspect's injected tool support: recognising its bundle, and where it is sealed.

Inspect injects its tool-support tree (a PyInstaller onedir bundle: a launcher and
`_internal/`) by piping a gzipped tar into `tar xzf -` inside the sandbox, then runs the
launcher (`SANDBOX_CLI`) as a server whose state must outlive each call. The sandbox makes
such an exec *detached* only when the file it runs is that launcher, sealed: when an exec's
input is byte for byte one of the bundles Inspect ships (the files in `inspect_ai/binaries`,
where it also keeps bundles it downloaded or built), the exec service unpacks those same
bytes onto a read-only tmpfs of its own over the directory Inspect extracted into, and
records the launcher's inode. A detached exec then runs only that inode (through an fd),
and anything else at the path (a renamed, replaced, wrapped or linked launcher) runs as an
ordinary exec that ends with its call.
"""

from __future__ import annotations

import gzip
import hashlib
import posixpath
from pathlib import Path

import inspect_ai

from docket.core.inspect_private import SANDBOX_CLI

#: Where the tools live in the sandbox, with `/var/tmp` (a symlink to `/tmp` there) resolved.
TOOLS_DIR = posixpath.dirname(SANDBOX_CLI).replace("/var/tmp/", "/tmp/", 1)
LAUNCHER = posixpath.basename(SANDBOX_CLI)
#: Directories the tool server writes to inside its tree (its socket, pid file and logs).
SERVER_STATE = (".server",)

_MIN_BUNDLE = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
#: sha256 of each bundle file, by (path, size, mtime_ns, gunzipped), so each is hashed once.
_DIGESTS: dict[tuple[str, int, int, bool], str] = {}


def bundle_dir() -> Path:
    """Where Inspect keeps its tool-support bundles."""
    return Path(inspect_ai.__file__).parent / "binaries"


def _digest(path: Path, size: int, mtime_ns: int, unpacked: bool) -> str:
    """sha256 of a bundle file (of its gunzipped bytes with `unpacked`), computed once."""
    key = (str(path), size, mtime_ns, unpacked)
    if key not in _DIGESTS:
        with path.open("rb") as file:
            if unpacked:
                data = file.read()
                if data[:2] == _GZIP_MAGIC:
                    data = gzip.decompress(data)
                _DIGESTS[key] = hashlib.sha256(data).hexdigest()
            else:
                _DIGESTS[key] = hashlib.file_digest(file, "sha256").hexdigest()
    return _DIGESTS[key]


def _shipped_digests(unpacked: bool) -> set[str]:
    """Digests of Inspect's bundle files (gzipped as shipped, or as the plain tar Inspect
    falls back to when the sandbox's `tar` cannot gunzip)."""
    found: set[str] = set()
    try:
        entries = list(bundle_dir().iterdir())
    except OSError:
        return found
    for path in entries:
        try:
            info = path.stat()
            if path.is_file() and info.st_size >= _MIN_BUNDLE:
                found.add(_digest(path, info.st_size, info.st_mtime_ns, unpacked))
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
    return found


def is_tool_bundle(data: bytes | None) -> bool:
    """Whether `data` (an exec's input) is one of the tool-support bundles Inspect ships.

    Args:
        data: The bytes an exec got on stdin, or None.

    Returns:
        True when they equal a bundle file of Inspect's (gzipped or plain tar).
    """
    if data is None or len(data) < _MIN_BUNDLE:
        return False
    if data[:2] == _GZIP_MAGIC:
        return hashlib.sha256(data).hexdigest() in _shipped_digests(unpacked=False)
    if data[257:262] == b"ustar":
        return hashlib.sha256(data).hexdigest() in _shipped_digests(unpacked=True)
    return False


__all__ = ["LAUNCHER", "SERVER_STATE", "TOOLS_DIR", "bundle_dir", "is_tool_bundle"]
