"""read_file/write_file as small bash programs run inside the sandbox, as the sandbox user.

Running them inside (rather than touching host paths) keeps symlinks, permissions and
absolute paths meaning what they mean to the agent. Failures exit 200+errno.
"""

from __future__ import annotations

import errno
import os

_CLASSIFY = """
fail() {
  case "$1" in
    *"Permission denied"*|*"Read-only file system"*|*"Operation not permitted"*) exit 213 ;;
    *"Is a directory"*) exit 221 ;;
    *"Not a directory"*|*"File exists"*) exit 220 ;;
    *"No such file"*) exit 202 ;;
    *"File too large"*|*"File size limit"*) exit 227 ;;
    *"No space left"*) exit 228 ;;
    *) printf '%s' "$1" >&2; exit 205 ;;
  esac
}
"""

#: $1 = path (relative to the workspace); stdin = contents.
WRITE_SCRIPT = (
    _CLASSIFY
    + """
f=$1
[ -d "$f" ] && exit 221
d=$(dirname -- "$f")
if [ ! -d "$d" ]; then err=$(mkdir -p -- "$d" 2>&1) || fail "$err"; fi
err=$({ cat > "$f"; } 2>&1)
rc=$?
[ "$rc" -eq 153 ] && exit 227  # killed by SIGXFSZ (max_file_size_mb)
[ "$rc" -ne 0 ] && fail "$err"
exit 0
"""
)

#: $1 = path, $2 = largest size in bytes to read.
READ_SCRIPT = """
f=$1
[ -e "$f" ] || exit 202
[ -d "$f" ] && exit 221
[ -r "$f" ] || exit 213
size=$(stat -L -c %s -- "$f") || exit 205
[ "$size" -gt "$2" ] && exit 227
exec cat -- "$f"
"""

#: Exit code (200+errno) -> exception type.
_ERRORS: dict[int, type[OSError]] = {
    202: FileNotFoundError,
    213: PermissionError,
    220: NotADirectoryError,
    221: IsADirectoryError,
}

FILE_TOO_LARGE = 227


def file_error(returncode: int, file: str, stderr: str) -> OSError:
    """The OSError for a failed file program (`file` as the caller gave it)."""
    code = returncode - 200
    if returncode in _ERRORS:
        return _ERRORS[returncode](code, os.strerror(code), file)
    if 0 < code < 200 and code in errno.errorcode:
        return OSError(code, os.strerror(code), file)
    detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {returncode}"
    return OSError(errno.EIO, f"sandbox file operation failed: {detail}", file)
