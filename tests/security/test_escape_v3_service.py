"""Escape attempts (v3) on the exec service itself: starve it so the scorer's exec fails.

The agent's commands live in a child cgroup of the sample's whose `pids.max` is
`max_processes`; the exec service and its prepared namespace stay outside it, so a full
`pids.max` fails the agent's next fork and never the scorer's exec.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from docket.sandboxes.bwrap import cgroup
from docket.sandboxes.bwrap.cgroup import detect
from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.session import SandboxGone
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

MAX_PROCESSES = 16
LIMITS = BwrapConfig(memory_mb=256, max_processes=MAX_PROCESSES, max_file_size_mb=4)

#: Forks up to 40 setsid sleepers (as many as pids.max lets it), says how many, and lingers.
FILL_PIDS = textwrap.dedent(
    """
    import os, time
    started = 0
    for _ in range(40):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
        started += 1
    with open("/tmp/filled", "w") as report:
        report.write(str(started))
    time.sleep(60)
    """
)

#: The agent's next fork while the sleepers linger.
ONE_FORK = textwrap.dedent(
    """
    import os
    try:
        pid = os.fork()
    except BlockingIOError:
        print("EAGAIN")
    else:
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        print("forked")
    """
)

needs_cgroup = pytest.mark.skipif(
    not detect().available, reason=f"no usable cgroup here: {detect().reason}"
)


@needs_cgroup
@pytest.mark.escape(
    "Fill pids.max with 40 lingering setsid sleeps (max_processes: 16) so the scorer's exec fails",
    "the agent's commands are in a child cgroup with pids.max = max_processes; the exec "
    "service and its spare namespace are outside it",
)
async def test_full_pids_max_fails_the_agents_fork_not_the_scorers_exec() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        async with anyio.create_task_group() as tg:

            async def linger() -> None:
                await sb.exec(["python3", "-c", FILL_PIDS], timeout=60)

            tg.start_soon(linger)
            with anyio.fail_after(30):
                while not (await sb.exec(["test", "-s", "/tmp/filled"])).success:
                    await anyio.sleep(0.1)
            # the filler itself is one of the agent's 16 tasks
            assert await sb.read_file("/tmp/filled") == str(MAX_PROCESSES - 1)
            assert (await sb.exec(["python3", "-c", ONE_FORK])).stdout == "EAGAIN\n"
            scorer = await sb.exec(["echo", "scored"])
            assert (scorer.returncode, scorer.stdout) == (0, "scored\n")
            await sb.write_file("check.txt", "ok")
            assert await sb.read_file("check.txt") == "ok"
            tg.cancel_scope.cancel()
        assert sb.session.alive
        after = await sb.exec(["sh", "-c", "echo $$ > /dev/null && echo alive"])
        assert after.stdout == "alive\n"


@needs_cgroup
@pytest.mark.escape(
    "Move out of the agent's cgroup through an inherited fd of a cgroup.procs",
    "each command writes itself into the agent's cgroup and closes that fd before execve; "
    "there is no /sys",
)
async def test_command_holds_no_cgroup_fd_and_sees_no_cgroupfs() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        fds = await sb.exec(
            ["python3", "-c", "import os; print(sorted(os.listdir('/proc/self/fd')))"]
        )
        assert fds.stdout == "['0', '1', '2', '3']\n"  # 3: listdir's own
        assert not (await sb.exec(["ls", "/sys/fs/cgroup"])).success
        own = await sb.exec(["cat", "/proc/self/cgroup"])
        pids_line = next(
            line for line in own.stdout.splitlines() if ":pids:" in line or line[:3] == "0::"
        )
        assert pids_line.endswith("/agent")  # the command, not the service's cgroup
        cgroup = sb.session.cgroup
        assert cgroup is not None and cgroup.agent_tasks() == 0  # nothing of it left running


@needs_cgroup
@pytest.mark.escape(
    "Make the exec service's clone fail (EAGAIN) with 40 concurrent execs at max_processes: 4",
    "a clone the kernel refuses fails that exec alone (exit 126, one line); the service "
    "lives on and the next exec runs",
)
async def test_clone_eagain_fails_one_exec_and_the_service_lives_on() -> None:
    config = BwrapConfig(memory_mb=256, max_processes=4)
    results: list[tuple[int, str]] = []
    async with bwrap_sandbox(config) as sb:

        async def one() -> None:
            done = await sb.exec(["sleep", "2"], timeout=30, concurrency=False)
            results.append((done.returncode, done.stderr))

        async with anyio.create_task_group() as tg:
            for _ in range(40):
                tg.start_soon(one)
        # the service's clone, or the namespace init's fork, got EAGAIN (or the spare that
        # hit it was gone when its request came: EPIPE)
        refused = re.compile(
            r"bwrap sandbox: cannot start the command: [^\n]*\[Errno (11|32)\] [^\n]*\n"
        )
        codes = sorted({code for code, _stderr in results})
        assert codes == [0, 126]  # some ran, the rest were refused; none was killed
        assert all(refused.fullmatch(err) for code, err in results if code == 126), results
        assert any("[Errno 11]" in err for _code, err in results)
        assert sb.session.alive
        assert (await sb.exec(["echo", "alive"])).stdout == "alive\n"


def _new_user_namespace() -> tuple[subprocess.Popen[bytes], int]:
    """A host process in a user namespace of its own, kept alive, and that namespace's inode."""
    holder = subprocess.Popen(
        ["unshare", "-U", "sh", "-c", "stat -L -c %i /proc/self/ns/user; exec sleep 60"],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None
    return holder, int(holder.stdout.readline())


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
@pytest.mark.escape(
    "Teardown of a sandbox that died on its own kills processes of whoever reuses its "
    "user-namespace inode number (another sample, or any host process)",
    "each session holds its user namespace open until teardown's survivor scan, so the "
    "kernel cannot pass that number on",
)
async def test_dead_sandboxs_teardown_kills_nothing_that_reused_its_namespace_number() -> None:
    holders: list[subprocess.Popen[bytes]] = []
    try:
        async with bwrap_sandbox(LIMITS) as dead:
            number = dead.session.user_ns
            signal.pidfd_send_signal(dead.session.pidfd, signal.SIGKILL)  # as an OOM kill would
            while dead.session.process.poll() is None:
                await anyio.sleep(0.01)
            # new namespaces, held, take the lowest free numbers: the dead one's once freed
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and len(holders) < 150:
                holder, inode = _new_user_namespace()
                holders.append(holder)
                if inode == number:
                    break
                await anyio.sleep(0.01)
        # the dead sandbox is torn down: every holder lives on
        assert [holder.poll() for holder in holders] == [None] * len(holders)
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()


async def test_sandbox_gone_names_its_cause_in_one_line() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        signal.pidfd_send_signal(sb.session.pidfd, signal.SIGKILL)
        with pytest.raises(SandboxGone) as gone:
            await sb.exec(["true"])
    message = str(gone.value)
    assert "\n" not in message
    assert message.startswith("the bwrap sandbox of this sample is gone: its exec service ")
    assert message.endswith(
        "; cause: its exec service was killed by SIGKILL; the sample cannot go on"
    )


def test_cgroup_events_count_oom_kills_and_refused_forks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cgroup.subtree_control").write_text("memory pids\n")
    monkeypatch.setenv(cgroup.CGROUP_ENV, str(tmp_path))
    cgroup.detect.cache_clear()
    try:
        sample = cgroup.SampleCgroup(cgroup.detect(), memory_mb=64, max_tasks=80, agent_tasks=16)
    finally:
        cgroup.detect.cache_clear()
    [path] = sample.paths
    assert sample.events() == {"oom_kill": 0, "pids_max": 0, "agent_pids_max": 0}
    (path / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 3\noom_kill 2\n")
    (path / "pids.events").write_text("max 5\n")  # v2: the agent's 4 are in it too
    (path / "agent" / "pids.events").write_text("max 4\n")
    assert sample.events() == {"oom_kill": 2, "pids_max": 1, "agent_pids_max": 4}
