"""Data splits: content hashes, private generated test splits, and the log metadata naming them.

A benchmark's shipped data is its public default split. `docket generate <benchmark> --seed SECRET
--out DIR` writes a fresh split from a secret seed (any string; only its hash reaches the
generator, and the seed is never written), and `-T data=DIR` on the benchmark's tasks runs on it.
Every task records the split it ran on under `SPLIT_KEY` in the task metadata (Inspect copies it
into `log.eval.metadata`), so reports show the split's hash and gates refuse to compare rows from
different splits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SPLIT_KEY = "docket_split"
"""Task metadata key: {"sha256": content hash, "source": "shipped" | "generated", "name": ...}."""

MANIFEST = "split.json"
"""File `docket generate` writes into a generated split (benchmark, content hash; no seed)."""


def secret_seed(seed: str) -> int:
    """The integer seed a generator gets from a secret string.

    Args:
        seed: Any string (a passphrase, a number); empty strings are refused.

    Returns:
        A 63-bit integer derived from the string's SHA-256 (so the secret itself never needs to
        be a small integer that can be enumerated).

    Raises:
        ValueError: The seed is empty.
    """
    if not seed:
        raise ValueError("--seed must not be empty")
    return int.from_bytes(hashlib.sha256(seed.encode("utf-8")).digest()[:8], "big") >> 1


def files_digest(root: Path, files: Iterable[Path] | None = None) -> str:
    """SHA-256 over a split's files: each relative path and content, in sorted order.

    Args:
        root: The split's directory.
        files: The files to hash (default: every file under `root` except `MANIFEST`).

    Returns:
        The hex digest; the same files give the same digest wherever they lie.
    """
    chosen = sorted(p for p in (files if files is not None else root.rglob("*")) if p.is_file())
    digest = hashlib.sha256()
    for path in chosen:
        relative = path.relative_to(root).as_posix()
        if relative == MANIFEST:
            continue
        digest.update(relative.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def rows_digest(rows: Iterable[Any]) -> str:
    """SHA-256 over JSON-serialisable rows (sorted keys, compact), in their order.

    Args:
        rows: The split's records as loaded.

    Returns:
        The hex digest.
    """
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, separators=(",", ":")).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def split_metadata(sha256: str, *, generated: bool, name: str = "") -> dict[str, dict[str, str]]:
    """Task metadata naming the split a task runs on.

    Args:
        sha256: The split's content hash (`files_digest` or `rows_digest`).
        generated: True for a split from `docket generate` (`-T data=DIR`), False for the
            shipped one.
        name: Optional label (e.g. the directory's name).

    Returns:
        `{SPLIT_KEY: {...}}`, to merge into `Task(metadata=...)`.
    """
    entry = {"sha256": sha256, "source": "generated" if generated else "shipped"}
    if name:
        entry["name"] = name
    return {SPLIT_KEY: entry}


def split_of(metadata: dict[str, Any] | None) -> str | None:
    """The split hash recorded in an eval's metadata, or None where none was recorded.

    Args:
        metadata: `log.eval.metadata` (or a task's metadata).

    Returns:
        The split's SHA-256, or None.
    """
    entry = (metadata or {}).get(SPLIT_KEY)
    if isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
        return str(entry["sha256"])
    return None


def write_manifest(out: Path, benchmark: str) -> str:
    """Write `MANIFEST` into a generated split and return the split's content hash.

    Args:
        out: The directory the generator wrote.
        benchmark: The benchmark folder's name.

    Returns:
        The split's SHA-256 (`files_digest(out)`).
    """
    sha256 = files_digest(out)
    manifest = {"benchmark": benchmark, "sha256": sha256, "source": "generated"}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return sha256


def read_manifest(data: Path) -> dict[str, Any]:
    """The manifest of a generated split, checked against the files it names.

    Args:
        data: A directory written by `docket generate`.

    Returns:
        The manifest (benchmark, sha256, source).

    Raises:
        ValueError: No manifest, an unreadable one, or files that no longer match its hash.
    """
    path = data / MANIFEST
    if not path.is_file():
        raise ValueError(f"{data}: no {MANIFEST}; write the split with `docket generate`")
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: unreadable manifest ({error})") from error
    if not isinstance(manifest, dict) or manifest.get("sha256") != files_digest(data):
        raise ValueError(f"{data}: files changed since `docket generate` wrote {MANIFEST}")
    return manifest


def checked_split(task: str, benchmark: str, data: Path) -> dict[str, Any]:
    """The manifest of a generated split a task was given, or one line saying why it is unusable.

    Args:
        task: The task's name, which starts the error line.
        benchmark: The benchmark folder whose generator must have written the split.
        data: The `-T data=` directory.

    Returns:
        The manifest (benchmark, sha256, source).

    Raises:
        PrerequisiteError: No or a stale manifest, or a split of another benchmark.
    """
    from docket.core.inspect_private import PrerequisiteError

    try:
        manifest = read_manifest(data)
    except ValueError as ex:
        raise PrerequisiteError(f"{task}: -T data={data}: {ex}") from None
    if manifest.get("benchmark") != benchmark:
        other = manifest.get("benchmark")
        raise PrerequisiteError(f"{task}: -T data={data} is a split of {other!r}, not {benchmark}")
    return manifest
