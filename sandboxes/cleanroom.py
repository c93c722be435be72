"""A clean room for scorers: no agent process alive, no agent-shaped environment.

`scoring_sandbox()` ends every process the agent started in the sample's sandbox (Inspect's
tool-support server and its shells included), then gives the scorer a private directory the
agent never saw and an `exec` that runs with a fixed environment: a fresh `HOME` and
`TMPDIR` in that directory, a fixed `PATH` of system directories, `PYTHONNOUSERSITE`,
`PYTHONSAFEPATH`, and nothing else (`/usr/bin/env -i`), so no `BASH_ENV`, `ENV`,
`PROMPT_COMMAND`, `LD_PRELOAD`, `PYTHONPATH` or user site of the agent's reaches it.
How processes end depends on the sandbox (`end_agent_processes`).
"""

from __future__ import annotations

import posixpath
import secrets
import weakref
from typing import Literal, TypeVar, overload

from inspect_ai.util import ExecResult, SandboxEnvironment, sandbox

from docket.core.inspect_private import (
    DockerSandboxEnvironment,
    LocalSandboxEnvironment,
    compose_command,
)

from .bwrap.sandbox import BwrapSandboxEnvironment

#: The only `PATH` of a clean exec: system directories the agent cannot write.
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: `PYTHONPYCACHEPREFIX` of a clean exec: not a directory, so python reads no bytecode cache
#: (an unchecked-hash `.pyc` the agent left in a `__pycache__` would replace the source of a
#: module the scorer wrote beside it) and writes none.
NO_PYCACHE = "/dev/null"
#: Where each scoring room is made (a fresh name per room, mode 0700).
ROOM_PARENT = "/tmp"
_ST = TypeVar("_ST", bound=SandboxEnvironment)
_ENV = "/usr/bin/env"
_SHELL = "/bin/sh"
_RESTART_TIMEOUT = 120
#: Where the agent can write (those that exist are swept for links through /proc).
AGENT_WRITABLE = ("/workspace", "/home/agent", "/tmp", "/var/tmp", "/dev/shm")
#: Run with each symlink found under `AGENT_WRITABLE` as an argument: removes those whose
#: resolution passes through /proc (`/proc/self/fd/3`, `/dev/fd/3`, `/dev/stdin`,
#: `/proc/self/cwd`, ...), which name whatever the process that opens them holds: a scorer's
#: check comparing the agent's file with its own expected one would compare that with itself.
#: Each link is resolved component by component with `readlink` (one level at a time, never
#: through a magic link), so a chain through other links or a directory link is caught too.
_UNLINK_PROC = r"""
through_proc() {
  todo=$1 done= n=0
  while [ -n "$todo" ]; do
    n=$((n + 1))
    [ $n -gt 4000 ] && return 1
    case $todo in /*) done= todo=${todo#/}; continue;; esac
    comp=${todo%%/*}
    case $todo in */*) todo=${todo#*/};; *) todo=;; esac
    case $comp in ''|.) continue;; ..) done=${done%/*}; continue;; esac
    cur=$done/$comp
    case $cur in /proc|/proc/*) return 0;; esac
    if [ -L "$cur" ]; then
      t=$(readlink -- "$cur"; echo .) || return 0
      t=${t%.}; t=${t%?}
      case $t in /*) done=;; esac
      todo=$t${todo:+/$todo}
    else
      done=$cur
    fi
  done
  return 1
}
for link; do
  if through_proc "$link"; then
    chmod u+wx -- "${link%/*}" 2>/dev/null
    rm -f -- "$link" || printf '%s ' "$link" >&3
  fi
done
"""
#: The same sweep in python (`python3 -I -S`, where the image has it): one process, not one
#: `readlink` per link (5 000 links: 0.3 s against 10 s at load 10); and a directory the agent
#: made unlistable (mode 0111) or read-only gets its owner's bits for the walk or the removal,
#: and its mode back after.
_UNLINK_PROC_PY = r"""
import os, stat, sys

def through_proc(path):
    todo, done, n = path.split("/")[::-1], "", 0
    while todo:
        n += 1
        if n > 4000:
            return False
        comp = todo.pop()
        if comp in ("", "."):
            continue
        if comp == "..":
            done = done.rsplit("/", 1)[0]
            continue
        cur = done + "/" + comp
        if cur == "/proc" or cur.startswith("/proc/"):
            return True
        if os.path.islink(cur):
            target = os.readlink(cur)
            if target.startswith("/"):
                done = ""
            todo.extend(target.split("/")[::-1])
        else:
            done = cur
    return False

kept = []

def sweep(folder):
    try:
        entries = list(os.scandir(folder))
    except PermissionError:
        mode = os.lstat(folder).st_mode
        os.chmod(folder, stat.S_IMODE(mode) | 0o500)
        try:
            entries = list(os.scandir(folder))
        finally:
            os.chmod(folder, stat.S_IMODE(mode))
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            try:
                bad = through_proc(entry.path)
            except OSError:
                bad = True
            if bad:
                try:
                    mode = stat.S_IMODE(os.lstat(folder).st_mode)
                    os.chmod(folder, mode | 0o300)
                    try:
                        os.unlink(entry.path)
                    finally:
                        os.chmod(folder, mode)
                except OSError:
                    kept.append(entry.path)
        elif entry.is_dir(follow_symlinks=False):
            sweep(entry.path)

sys.setrecursionlimit(100000)
for root in sys.argv[1:]:
    if os.path.isdir(root) and not os.path.islink(root):
        sweep(root)
if kept:
    sys.exit("cannot remove links through /proc: " + " ".join(map(repr, kept)))
"""
#: Make the room ($1; empty: only sweep): sweep links through /proc (python's $3, else $2),
#: give /tmp back its owner's write and search bits (the agent owns it on bwrap and could
#: have taken them), then mkdir. One `find` first: where it lists every folder without an
#: error and finds no symlink, there is nothing to sweep and no python starts (a folder it
#: cannot list, or any symlink, takes the full sweep).
_MAKE_ROOM = r"""
room=$1 sweep=$2 sweep_py=$3
shift 3
n=$#
for root; do
  if [ -d "$root" ] && [ ! -L "$root" ]; then set -- "$@" "$root"; fi
done
shift "$n"
if [ $# -eq 0 ]; then
  :
elif found=$(/usr/bin/find "$@" -type l -print -quit 2>/dev/null) && [ -z "$found" ]; then
  :
elif [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -I -S -c "$sweep_py" "$@" || exit 1
else
  kept=$(
    for root; do
      [ -d "$root" ] && [ ! -L "$root" ] || continue
      find "$root" -type l -exec /bin/sh -c "$sweep" sh {} + 3>&1 >/dev/null 2>&1
    done
  )
  if [ -n "$kept" ]; then
    echo "cannot remove links through /proc: $kept" >&2
    exit 1
  fi
fi
[ -n "$room" ] || exit 0
[ -L /tmp ] || chmod u+wx /tmp 2>/dev/null
exec /bin/mkdir -m 0700 "$room" "$room/home" "$room/tmp"
"""
#: Kill every process the caller may signal but pid 1 and itself, until none is left (zombies
#: aside): for sandboxes without a way from outside (k8s and others).
_SWEEP = r"""
i=0
while [ $i -lt 50 ]; do
  kill -9 -1 2>/dev/null
  sleep 0.05
  left=
  for p in /proc/[0-9]*; do
    n=${p#/proc/}
    [ "$n" = 1 ] || [ "$n" = $$ ] && continue
    state=
    while read -r key value rest; do
      [ "$key" = State: ] && state=$value && break
    done < "$p/status" 2>/dev/null
    [ -z "$state" ] || [ "$state" = Z ] || left="$left $n"
  done
  [ -z "$left" ] && exit 0
  i=$((i + 1))
done
echo "still alive:$left" >&2
exit 1
"""

#: Sandboxes no process of the agent's is alive in (a scorer's exec on docker or k8s may leave
#: one behind: the next clean exec ends it first).
_CLEAN: weakref.WeakSet[SandboxEnvironment] = weakref.WeakSet()


class CleanRoomError(RuntimeError):
    """The clean room could not be made (one line: what failed and why)."""


#: Why Inspect's `local` sandbox gets no clean room (`CleanRoomError`).
NO_LOCAL_ROOM = (
    "Inspect's local sandbox runs on the evaluator's own host: it has no clean room (ending "
    "every process there would end the evaluator's, and the room's sweep would touch the host's "
    "/tmp); score in bwrap, docker or k8s"
)


def _refuse_local(sb: SandboxEnvironment) -> None:
    """Raise `CleanRoomError` for Inspect's `local` sandbox, before any command runs in it."""
    if _as(sb, LocalSandboxEnvironment) is not None:
        raise CleanRoomError(NO_LOCAL_ROOM)


class RoomUnavailable(CleanRoomError):
    """The agent's processes ended, but the sandbox left no room to score in (its disk or inodes
    full, its writable folders taken): the agent's doing, which a scorer scores as a failure
    with this reason rather than letting the sample error."""


async def end_agent_processes(sb: SandboxEnvironment | None = None) -> None:
    """End every process the agent started in a sandbox, whatever it runs as or is named.

    - `bwrap`: the exec service SIGKILLs the pid-namespace init of every exec still alive
      (the tool-support server's is the only one that outlives its call); the kernel kills
      the rest of each namespace, double-forked and renamed processes included.
    - `docker`: the container restarts (`docker compose restart -t 0`): every process ends,
      the container's files stay, and its pid 1 starts afresh.
    - others (`k8s`, ...): `kill -9 -1` as the sandbox's user until only pid 1 is left.
    - Inspect's `local`: refused (`CleanRoomError`); its processes are the evaluator's host's.

    Args:
        sb: The sandbox (default: the sample's default sandbox).

    Raises:
        CleanRoomError: The processes could not be ended, or `sb` is Inspect's `local`
            sandbox (one line).
    """
    sb = sb if sb is not None else sandbox()
    _refuse_local(sb)
    if (bwrap := _as(sb, BwrapSandboxEnvironment)) is not None:
        try:
            await bwrap.session.end_processes()
        except TimeoutError as ex:
            raise CleanRoomError(f"could not end the agent's processes: {ex}") from None
    elif (docker := _as(sb, DockerSandboxEnvironment)) is not None:
        result = await compose_command(
            ["restart", "-t", "0", docker._service],
            project=docker._project,
            timeout=_RESTART_TIMEOUT,
        )
        if not result.success:
            raise CleanRoomError(
                f"could not restart the container to end the agent's processes: "
                f"{_one_line(result.stderr)}"
            )
    else:
        result = await sb.exec([_SHELL, "-c", _SWEEP], timeout=60)
        if not result.success:
            raise CleanRoomError(f"could not end the agent's processes: {_one_line(result.stderr)}")
    _CLEAN.add(sb)


def _as(sb: SandboxEnvironment, cls: type[_ST]) -> _ST | None:
    """The sandbox as provider class `cls` (seen through Inspect's event proxy), or None."""
    try:
        return sb.as_type(cls)
    except TypeError:
        return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return "".join(c for c in line if c.isprintable())[:300] or "(no message)"


class ScoringSandbox:
    """A scorer's view of the sample's sandbox: a private directory and clean execs.

    Made by `scoring_sandbox()`. `root` is a directory created after the agent's processes
    ended, under a name the agent could not predict (so nothing of the agent's is in it or
    linked to it); `home` and `tmp` are in it.
    """

    def __init__(self, sb: SandboxEnvironment, root: str, live: bool) -> None:
        self._ran = False
        self.sandbox = sb
        self.root = root
        self.home = f"{root}/home"
        self.tmp = f"{root}/tmp"
        self.live = live

    @property
    def env(self) -> dict[str, str]:
        """The whole environment of a clean exec (nothing else is passed on)."""
        return {
            "PATH": CLEAN_PATH,
            "HOME": self.home,
            "TMPDIR": self.tmp,
            "LANG": "C.UTF-8",
            "PYTHONNOUSERSITE": "1",
            "PYTHONSAFEPATH": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPYCACHEPREFIX": NO_PYCACHE,
        }

    def path(self, name: str) -> str:
        """The absolute path of `name` in the room.

        Args:
            name: A relative path without `..`.

        Returns:
            The path under `root`.

        Raises:
            ValueError: `name` is absolute or leaves the room.
        """
        norm = posixpath.normpath(name)
        if posixpath.isabs(norm) or norm == ".." or norm.startswith("../"):
            raise ValueError(f"a scoring room path must stay in the room: {name!r}")
        return f"{self.root}/{norm}"

    async def _ensure_clean(self) -> None:
        if not self.live and self.sandbox not in _CLEAN:
            await end_agent_processes(self.sandbox)

    async def write_file(self, name: str, contents: str | bytes) -> str:
        """Write a file of the scorer's into the room (e.g. a check script).

        Args:
            name: Its path relative to the room.
            contents: Its text or bytes.

        Returns:
            Its absolute path in the sandbox.
        """
        await self._ensure_clean()
        path = self.path(name)
        await self.sandbox.write_file(path, contents)
        return path

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        """Read a file of the sandbox (relative paths: the sandbox's working directory).

        Args:
            file: The path.
            text: Decode as UTF-8.

        Returns:
            Its contents.
        """
        await self._ensure_clean()
        if text:
            return await self.sandbox.read_file(file, text=True)
        return await self.sandbox.read_file(file, text=False)

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout: int | None = None,
    ) -> ExecResult[str]:
        """Run `cmd` with the clean environment (plus `env`), in the room by default.

        `cmd[0]` is looked up on `CLEAN_PATH` only. On docker and k8s, a process an earlier
        clean exec left behind is ended first (on bwrap nothing outlives its exec). From the
        room's second command on, links through /proc are swept again first (an earlier
        command may have run the agent's code).

        Args:
            cmd: The command and its arguments.
            input: Its standard input.
            cwd: Its working directory (default: the room).
            env: Variables added to the clean environment.
            timeout: Seconds before it is killed.

        Returns:
            Inspect's `ExecResult`.
        """
        await self._ensure_clean()
        if self._ran:  # what ran (the agent's code, say) may have left links through /proc
            await _prepare(self.sandbox, "")
        self._ran = True
        pairs = [f"{k}={v}" for k, v in {**self.env, **(env or {})}.items()]
        if _as(self.sandbox, BwrapSandboxEnvironment) is None:
            _CLEAN.discard(self.sandbox)  # what it runs may outlive it there
        return await self.sandbox.exec(
            [_ENV, "-i", *pairs, *cmd], input=input, cwd=cwd or self.root, timeout=timeout
        )

    async def bash(
        self, script: str, cwd: str | None = None, timeout: int | None = None
    ) -> ExecResult[str]:
        """Run a bash script: `bash --noprofile --norc -c script` in the clean environment.

        Args:
            script: The script.
            cwd: Its working directory (default: the room).
            timeout: Seconds before it is killed.

        Returns:
            Inspect's `ExecResult`.
        """
        return await self.exec(
            ["/bin/bash", "--noprofile", "--norc", "-c", script], cwd=cwd, timeout=timeout
        )


async def scoring_sandbox(name: str | None = None, *, live: bool = False) -> ScoringSandbox:
    """The sample's sandbox, made a clean room for a scorer (`clean_room` of `sandbox(name)`).

    Call it at the start of a scorer, before its first command, and run every command
    through the returned object.

    Args:
        name: The sandbox's name (default: the sample's default sandbox).
        live: Keep the agent's processes running (for a scorer that must look at a service
            the agent started). Explicit opt-in: those processes can then still change what
            the scorer reads; the environment of its execs is clean all the same.

    Returns:
        The clean room.

    Raises:
        CleanRoomError: The processes could not be ended or the room not made (one line).
    """
    return await clean_room(sandbox(name) if name is not None else sandbox(), live=live)


async def clean_room(sb: SandboxEnvironment, *, live: bool = False) -> ScoringSandbox:
    """Make a clean room in sandbox `sb`: the step `scoring_sandbox` takes, for any sandbox.

    Ends every process the agent started (`end_agent_processes`, unless `live`), removes
    each symlink under `AGENT_WRITABLE` that resolves through `/proc` (it would name what the
    scorer's own process holds), gives `/tmp` back its owner's write bit, then makes a
    private directory under `/tmp` with a fresh unpredictable name (`mkdir`, which fails on
    anything already there, a planted symlink included).

    Args:
        sb: The sandbox.
        live: Keep the agent's processes running (see `scoring_sandbox`).

    Returns:
        The clean room.

    Raises:
        CleanRoomError: The processes could not be ended, or `sb` is Inspect's `local`
            sandbox, live or not (one line).
        RoomUnavailable: The room could not be made (one line): a scorer's failure to score,
            with this reason, not an error.
    """
    _refuse_local(sb)
    if not live:
        await end_agent_processes(sb)
    root = f"{ROOM_PARENT}/docket-score-{secrets.token_hex(16)}"
    await _prepare(sb, root)
    return ScoringSandbox(sb, root, live)


async def _prepare(sb: SandboxEnvironment, root: str) -> None:
    """Sweep links through /proc, then (unless `root` is empty) make the room `root`."""
    make = [_SHELL, "-c", _MAKE_ROOM, _SHELL, root, _UNLINK_PROC, _UNLINK_PROC_PY, *AGENT_WRITABLE]
    made = await sb.exec([_ENV, "-i", f"PATH={CLEAN_PATH}", *make], cwd="/", timeout=120)
    if not made.success:
        what = f"make the scoring room {root}" if root else "sweep links through /proc"
        raise RoomUnavailable(f"could not {what}: {_one_line(made.stderr)}")


__all__ = [
    "AGENT_WRITABLE",
    "CLEAN_PATH",
    "NO_LOCAL_ROOM",
    "NO_PYCACHE",
    "CleanRoomError",
    "RoomUnavailable",
    "ScoringSandbox",
    "clean_room",
    "end_agent_processes",
    "scoring_sandbox",
]
