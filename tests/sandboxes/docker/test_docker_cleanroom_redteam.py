"""The bwrap red-team round (`test_cleanroom_redteam`) against Inspect's docker sandbox.

Same attempts, same safe verdicts, in one container (each `clean_room` restarts it): a planted
unchecked-hash `.pyc` for a module the scorer writes, links through /proc where the check
reads the agent's answer, an rlimit the agent lowered on the container's pid 1 (the process a
restart replaces), and what a read-only root still lets the agent write.
"""

from __future__ import annotations

import pytest

from docket.sandboxes import clean_room
from tests.sandboxes.docker.container_support import docker_container
from tests.sandboxes.test_cleanroom_redteam import (
    COMPARE,
    HIDDEN_TEST,
    PLANT_PYC,
    PLANT_SITECUSTOMIZE,
    PROC_LINKS,
    RUN_HIDDEN,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

#: Run by the agent: lower the container's pid 1's (tini's, uid 1000 like the agent) open
#: files limit to 16 through prlimit(2), which needs no capability between processes of a uid.
LOWER_PID1_NOFILE = """
import ctypes, sys
class Limit(ctypes.Structure):
    _fields_ = [("soft", ctypes.c_ulong), ("hard", ctypes.c_ulong)]
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(libc.prlimit(1, 7, ctypes.byref(Limit(16, 16)), None))
"""
#: Run by the agent: every directory it can write (outside /proc and /sys).
WRITABLE = (
    "for d in / /etc /usr /usr/local/lib /var /var/lib /run /run/lock /var/lock /opt /srv /mnt "
    "/media /root /dev /dev/shm /dev/mqueue /dev/pts /var/tmp /tmp /home /home/agent /workspace; "
    'do [ -d "$d" ] && [ -w "$d" ] && echo "$d"; done; '
    "find / -xdev -writable 2>/dev/null"  # the root's own files, and the mount points on it
)


async def test_docker_redteam_round(docker_engine: str) -> None:
    async with docker_container("docket-cleanroom-redteam") as sb:
        writable = await sb.exec(["bash", "-c", WRITABLE])
        assert sorted(set(writable.stdout.split())) == [
            "/dev/mqueue",  # POSIX queues: the container's own IPC namespace; read by no check
            "/dev/shm",
            "/home/agent",
            "/tmp",
            "/var/tmp",
            "/workspace",
        ]

        assert (await sb.exec(["python3", "-c", PLANT_PYC])).success
        room = await clean_room(sb)
        await sb.write_file("/workspace/test_hidden.py", HIDDEN_TEST)
        assert not (await room.exec(RUN_HIDDEN, cwd="/workspace", timeout=60)).success
        await sb.write_file("/workspace/answer.txt", "42\n")  # honest control, cache still there
        room = await clean_room(sb)
        assert (await room.exec(RUN_HIDDEN, cwd="/workspace", timeout=60)).success

        for link in ("chain", "dev-fd", "dir-link", "fd", "relative", "stdin"):
            plant = f"cd /workspace && rm -rf answer.txt a f root && {PROC_LINKS[link]}"
            assert (await sb.exec(["bash", "-c", plant])).success, link
            room = await clean_room(sb)
            await room.write_file("expected.txt", "42\n")
            verdicts = [
                (await room.exec(COMPARE[c], input="42\n", timeout=30)).success
                for c in sorted(COMPARE)
            ]
            assert verdicts == [False, False], link

        assert (await sb.exec(["python3", "-c", LOWER_PID1_NOFILE])).success
        room = await clean_room(sb)
        limits = await room.bash("ulimit -Sn; ulimit -Hn; grep 'open files' /proc/1/limits")
        assert limits.stdout.split()[:2] == ["1024", "1024"]
        assert limits.stdout.split()[-3:-1] == ["1024", "1024"]


async def test_docker_python_startup_files_and_modes(docker_engine: str) -> None:
    """No python startup file can be planted; `chmod 0` of /workspace fails the check, not the
    scorer's room or its file operations."""
    async with docker_container("docket-cleanroom-redteam-2") as sb:
        planted = await sb.exec(["python3", "-c", PLANT_SITECUSTOMIZE])
        assert planted.stdout.strip() == "[]"
        plant = "echo 42 > /workspace/answer.txt; chmod 0 /workspace"
        assert (await sb.exec(["bash", "-c", plant])).success
        room = await clean_room(sb)
        assert not (await room.exec(["python3", "-c", "import sys; sys.exit(1)"])).success
        await room.write_file("expected.txt", "42\n")
        assert await room.read_file(room.path("expected.txt")) == "42\n"
        check = await room.exec(COMPARE["cmp"], timeout=30)
        assert not check.success
