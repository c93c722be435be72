"""Escape attempts on the host's pty pool (issue 30, item 3).

Every devpts instance draws from the host's one `kernel.pty.max`; a sample that opens ptys
until the kernel says no used to take every pty left, so other samples' `bash_session` shells
(and the host's terminals) got none. Each sandbox now has a devpts of its own with `max`.
"""

from __future__ import annotations

import errno
import os
import textwrap

import anyio
import pytest

from docket.core.inspect_private import PrerequisiteError
from docket.sandboxes.bwrap import probe
from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.layout import PTY_MAX
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

LIMITS = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=4)
#: Attempts of the hog: enough to show the limit (v2 gave all of them), far from the host's max.
ATTEMPTS = 512

#: Opens /dev/ptmx until refused (or ATTEMPTS), reports, then holds them until /workspace/stop.
HOG = textwrap.dedent(
    """
    import errno, os, resource, sys, time
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    held, why = [], "none"
    for _ in range(int(sys.argv[1])):
        try:
            held.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
        except OSError as ex:
            why = errno.errorcode[ex.errno]
            break
    with open("/workspace/count", "w") as out:
        out.write(f"{len(held)} {why}")
    deadline = time.monotonic() + 60
    while not os.path.exists("/workspace/stop") and time.monotonic() < deadline:
        time.sleep(0.05)
    """
)
ONE_PTY = "import os, pty; m, s = pty.openpty(); print(os.ttyname(s))"


@pytest.mark.escape(
    f"Exhaust the host's ptys (kernel.pty.max) from one sample ({ATTEMPTS} opens of /dev/ptmx "
    "while another sample and the host open one)",
    f"each sandbox has its own devpts instance (newinstance, max={PTY_MAX}): ENOSPC there, "
    "the host's pool untouched",
)
async def test_one_sample_cannot_take_every_pty() -> None:
    async with bwrap_sandbox(LIMITS) as hog, bwrap_sandbox(LIMITS) as other:
        seen: dict[str, str] = {}

        async def hold() -> None:
            await hog.exec(["python3", "-c", HOG, str(ATTEMPTS)], timeout=90)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            with anyio.fail_after(30):
                while True:
                    try:
                        seen["count"] = await hog.read_file("/workspace/count")
                        break
                    except FileNotFoundError:
                        await anyio.sleep(0.1)
            # while the hog holds its ptys: another sample, and the host, still get one
            seen["other"] = (await other.exec(["python3", "-c", ONE_PTY])).stdout
            host_master, host_slave = os.openpty()
            seen["host"] = os.ttyname(host_slave)
            os.close(host_master)
            os.close(host_slave)
            await hog.write_file("/workspace/stop", "")
    assert seen["count"] == f"{PTY_MAX} ENOSPC"
    assert seen["other"].startswith("/dev/pts/")
    assert seen["host"].startswith("/dev/pts/")


async def test_a_pty_inside_works_and_names_the_sandboxes_own_instance() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["sh", "-c", f"python3 -c '{ONE_PTY}'; grep devpts /proc/mounts"])
    assert result.stdout.splitlines()[0] == "/dev/pts/0"  # a fresh instance: numbering from 0
    assert f"max={PTY_MAX}" in result.stdout


def test_require_ptys_refuses_a_host_without_them(monkeypatch: pytest.MonkeyPatch) -> None:
    binary = anyio.run(probe.ensure_bwrap, BwrapConfig())
    monkeypatch.setitem(probe._PTYS_REFUSED, binary.path, os.strerror(errno.EINVAL))
    with pytest.raises(PrerequisiteError, match="ptys"):
        probe.host_limits(BwrapConfig(require=["seccomp", "ptys"]), binary)
    limits = probe.host_limits(BwrapConfig(), binary)  # not required: a warning, and it runs
    assert limits.seccomp
