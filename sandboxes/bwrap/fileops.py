"""read_file/write_file errors: the exec service's builtins report errno as JSON on stderr.

The builtins run inside the sandbox as the agent (same namespaces, no capabilities, same
seccomp filter), so symlinks, permissions and absolute paths mean what they mean to the agent.
They open with O_NONBLOCK and refuse anything but a regular file, so a FIFO cannot block them.
"""

from __future__ import annotations

import errno
import json

from .execd import BUILTIN_FAILED, FILE_TOO_LARGE

_ERRORS: dict[int, type[OSError]] = {
    errno.ENOENT: FileNotFoundError,
    errno.EACCES: PermissionError,
    errno.EPERM: PermissionError,
    errno.EROFS: PermissionError,
    errno.ENOTDIR: NotADirectoryError,
    errno.EEXIST: NotADirectoryError,
    errno.EISDIR: IsADirectoryError,
}


def file_error(returncode: int, file: str, stderr: bytes) -> OSError:
    """The OSError for a failed builtin (`file` as the caller gave it)."""
    if returncode == BUILTIN_FAILED:
        try:
            reason = json.loads(stderr.decode("utf-8", errors="replace"))
            code, message = int(reason["errno"]), str(reason["message"])
        except (ValueError, KeyError, TypeError):
            code, message = errno.EIO, "sandbox file operation failed"
        return _ERRORS.get(code, OSError)(code, message, file)
    detail = stderr.decode(errors="replace").strip().splitlines()
    why = detail[-1] if detail else f"exit {returncode}"
    return OSError(errno.EIO, f"sandbox file operation failed: {why}", file)


__all__ = ["FILE_TOO_LARGE", "file_error"]
