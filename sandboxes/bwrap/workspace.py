"""Per-sample host directories (workspace, /tmp, home, identity files) and their cleanup."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Name prefix of every per-sample directory under the host temp dir.
PREFIX = "docket-bwrap-"

SANDBOX_USER = "agent"
SANDBOX_UID = 1000
HOSTNAME = "sandbox"

_IDENTITY_FILES = {
    "passwd": (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}:{SANDBOX_USER}:/home/{SANDBOX_USER}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ),
    "group": f"root:x:0:\n{SANDBOX_USER}:x:{SANDBOX_UID}:\nnogroup:x:65534:\n",
    "hosts": f"127.0.0.1 localhost\n127.0.1.1 {HOSTNAME}\n::1 localhost\n",
    "hostname": f"{HOSTNAME}\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
}

#: Live sample directories of this process: root -> task name.
_LIVE: dict[Path, str] = {}


@dataclass(frozen=True)
class SampleDirs:
    """The host side of one sample's sandbox."""

    id: str
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def etc(self) -> Path:
        return self.root / "etc"


def base_dir() -> Path:
    """Where sample directories are created (the host temp dir)."""
    return Path(tempfile.gettempdir())


def create_sample_dirs(task_name: str, owner: int | None) -> SampleDirs:
    """Create a sample's directories; `owner` is the host uid/gid to hand them to (as root)."""
    sample_id = uuid.uuid4().hex[:12]
    root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{sample_id}-", dir=base_dir()))
    _LIVE[root] = task_name
    dirs = SampleDirs(id=sample_id, root=root)
    try:
        for path in (dirs.workspace, dirs.tmp, dirs.home, dirs.etc):
            path.mkdir(mode=0o755)
        for name, text in _IDENTITY_FILES.items():
            (dirs.etc / name).write_text(text, encoding="utf-8")
            (dirs.etc / name).chmod(0o644)
        if owner is not None:
            for path in (dirs.root, dirs.workspace, dirs.tmp, dirs.home):
                os.chown(path, owner, owner)
    except BaseException:
        remove_sample_dirs(dirs)
        raise
    return dirs


def _force_remove(func: Callable[..., Any], path: str, _exc: object) -> None:
    """rmtree error hook: make the parent (and the entry) writable, then retry once."""
    for target in (os.path.dirname(path), path):
        try:
            mode = os.lstat(target).st_mode
            if stat.S_ISDIR(mode):
                os.chmod(target, stat.S_IMODE(mode) | stat.S_IRWXU)
        except OSError:
            pass
    try:
        func(path)
    except FileNotFoundError:
        pass


def remove_tree(root: Path) -> None:
    """Remove a sample root, even where the sandbox made entries read-only."""
    if root.exists():
        shutil.rmtree(root, onerror=_force_remove)
    _LIVE.pop(root, None)


def remove_sample_dirs(dirs: SampleDirs) -> None:
    """Remove one sample's directories."""
    remove_tree(dirs.root)


def remove_task_dirs(task_name: str) -> list[Path]:
    """Remove directories this process still holds for `task_name`; returns them."""
    roots = [root for root, task in list(_LIVE.items()) if task == task_name]
    for root in roots:
        remove_tree(root)
    return roots


def _ours(root: Path) -> bool:
    return os.geteuid() == 0 or root.stat().st_uid == os.getuid()


def remove_leftovers(sample_id: str | None) -> list[Path]:
    """Remove sample directories left on disk (by any process) whose id starts with `sample_id`."""
    pattern = f"{PREFIX}{sample_id or ''}*"
    removed: list[Path] = []
    for root in base_dir().glob(pattern):
        if root.is_dir() and not root.is_symlink() and _ours(root):
            remove_tree(root)
            removed.append(root)
    return removed
