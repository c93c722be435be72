"""Escape attempts on the sandbox's lifetime: ptrace of pid 1, faked failures, killing the service.

The ptrace attack is the real one: a daemon attaches to pid 1, injects `prctl(PR_SET_PDEATHSIG,
0)`, `close(1)` and `close(2)` into it (x86_64 syscall injection) and holds it stopped, then
keeps writing into the workspace; it must neither get that far nor outlive its exec.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import anyio
import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from tests.sandboxes.bwrap_support import (
    bwrap_sandbox,
    host_processes_matching,
    processes_gone,
    requires_bwrap,
)

pytestmark = requires_bwrap

LIMITS = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=4)
PROJECT = Path(__file__).resolve().parents[2]

#: argv: marker, report file. Forks a setsid daemon that attacks pid 1 and reports what it got.
PTRACE_ATTACK = textwrap.dedent(
    r"""
    import ctypes, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    ATTACH, GETREGS, SETREGS, SINGLESTEP = 16, 12, 13, 9
    NAMES = ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags "
             "rsp ss fs_base gs_base ds es fs gs").split()
    class Regs(ctypes.Structure):
        _fields_ = [(n, ctypes.c_ulonglong) for n in NAMES]
    marker, report = sys.argv[1], sys.argv[2]
    def say(text):
        with open(report, "a") as f:
            f.write(text + "\n")
    def syscall_site(pid):
        for line in open(f"/proc/{pid}/maps"):
            fields = line.split()
            if "x" in fields[1]:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                with open(f"/proc/{pid}/mem", "rb") as mem:
                    mem.seek(start)
                    at = mem.read(min(end - start, 1 << 20)).find(b"\x0f\x05")
                if at >= 0:
                    return start + at
        raise RuntimeError("no syscall instruction found")
    def inject(pid, saved, site, nr, *args):
        regs = Regs.from_buffer_copy(saved)
        regs.rax, regs.orig_rax, regs.rip = nr, 2**64 - 1, site
        for name, value in zip(("rdi", "rsi", "rdx"), args):
            setattr(regs, name, value)
        libc.ptrace(SETREGS, pid, None, ctypes.byref(regs))
        libc.ptrace(SINGLESTEP, pid, None, None)
        os.waitpid(pid, 0x40000000)
        libc.ptrace(GETREGS, pid, None, ctypes.byref(regs))
        return regs.rax
    def attack():
        if libc.ptrace(ATTACH, 1, None, None) != 0:
            return say("attach failed: " + os.strerror(ctypes.get_errno()))
        os.waitpid(1, 0x40000000)
        saved = Regs()
        libc.ptrace(GETREGS, 1, None, ctypes.byref(saved))
        site = syscall_site(1)
        results = [inject(1, saved, site, 157, 1, 0), inject(1, saved, site, 3, 1),
                   inject(1, saved, site, 3, 2)]
        libc.ptrace(SETREGS, 1, None, ctypes.byref(saved))
        say(f"injected into pid 1: {results}")  # pid 1 stays stopped while we live
    if os.fork() == 0:
        os.setsid()
        for fd in (0, 1, 2):
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        try:
            attack()
        except Exception as ex:
            say(f"attack failed: {ex!r}")
        for _ in range(600):
            with open("/workspace/late", "a") as f:
                f.write(f"{time.time()} {marker}\n")
            time.sleep(0.1)
        os._exit(0)
    for _ in range(100):
        if os.path.exists(report):
            break
        time.sleep(0.05)
    time.sleep(0.2)
    print(open(report).read() if os.path.exists(report) else "no report")
    """
)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the injection is x86_64 code")
@pytest.mark.parametrize(
    "seccomp",
    [
        pytest.param(
            "default",
            marks=pytest.mark.escape(
                "Outlive the sample: ptrace pid 1, clear its parent-death signal, close its "
                "stdout/stderr, keep a setsid daemon writing",
                "seccomp denies ptrace; each exec's pid namespace ends with the command; "
                "teardown SIGKILLs pid 1 by its host pidfd",
            ),
        ),
        pytest.param(
            "none",
            marks=pytest.mark.escape(
                "The same ptrace attack with `seccomp: none`",
                "pid 1 (the exec service) holds capabilities the agent lacks and is not "
                "dumpable, so ptrace is refused; the exec's namespace still ends with it",
            ),
        ),
    ],
)
async def test_ptrace_of_pid_1_cannot_keep_processes_alive(seccomp: str) -> None:
    marker = f"docket_ptrace_{uuid.uuid4().hex[:10]}"
    config = BwrapConfig(**{**LIMITS.model_dump(), "seccomp": seccomp})
    script = ["python3", "-c", PTRACE_ATTACK, marker, "/tmp/attack.log"]
    async with bwrap_sandbox(config) as sb:
        start = time.monotonic()
        result = await sb.exec(script, timeout=30)
        assert time.monotonic() - start < 15, "exec must not hang on a traced pid 1"
        assert "attach failed: Operation not permitted" in result.stdout, result
        assert await processes_gone(marker)
        size = (await sb.exec(["sh", "-c", "wc -l < /workspace/late"])).stdout.strip()
        await anyio.sleep(0.5)
        assert (await sb.exec(["sh", "-c", "wc -l < /workspace/late"])).stdout.strip() == size
    assert await processes_gone(marker)


@pytest.mark.escape(
    "Hang exec forever by ptrace-stopping pid 1 (no timeout given)",
    "seccomp denies ptrace; an exec's end is the status the exec service reports",
)
async def test_ptrace_stop_of_pid_1_does_not_hang_exec() -> None:
    stop = (
        "import ctypes, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.ptrace(16, 1, None, None), ctypes.get_errno())\ntime.sleep(1)\n"
    )
    async with bwrap_sandbox(LIMITS) as sb:
        with anyio.fail_after(20):
            result = await sb.exec(["python3", "-c", stop])
        assert result.stdout == "-1 1\n"  # EPERM
        assert (await sb.exec(["true"])).success


@pytest.mark.parametrize(
    ("script", "code"),
    [
        pytest.param(
            "echo 'bwrap: Can not mount tmpfs on /newroot: Permission denied' >&2; exit 1",
            1,
            marks=pytest.mark.escape(
                "Fake bwrap's own failure text on stderr (exec raises instead of returning)",
                "the exit status travels on the service's channel; stderr is only output",
            ),
        ),
        pytest.param(
            "printf '\\037[docket-bwrap: exec failed]' >&2; exit 126",
            126,
            marks=pytest.mark.escape(
                "Fake the launcher's exec-failed marker (exec raises PermissionError)",
                "the exit status travels on the service's channel; stderr is only output",
            ),
        ),
    ],
)
async def test_faked_failure_text_is_just_output(script: str, code: int) -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["sh", "-c", script])
        assert result.returncode == code and not result.success
        assert result.stderr


@pytest.mark.escape(
    "Kill the sandbox's pid 1 or every process in sight (kill -9 1, kill -9 -1)",
    "pid 1 of each exec's namespace ignores signals from inside it; the exec service is "
    "not in the command's namespace",
)
async def test_killing_pid_1_from_inside_does_not_end_the_sandbox() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        await sb.write_file("kept.txt", "still here")
        result = await sb.exec(["sh", "-c", "kill -9 1; kill -KILL -1; echo survived"])
        assert (await sb.exec(["cat", "kept.txt"])).stdout == "still here"
        assert result.returncode in (0, 137)
        assert (await sb.exec(["echo", "ok"])).stdout == "ok\n"


EVALUATOR = textwrap.dedent(
    """
    import os, anyio
    from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
    async def main():
        envs = await BwrapSandboxEnvironment.sample_init("docket-test", None, {})
        sb = envs["default"]
        marker = os.environ["DOCKET_MARKER"]
        daemon = f"setsid sh -c 'sleep 60; : {marker}' </dev/null >/dev/null 2>&1 &"
        async with anyio.create_task_group() as tg:
            tg.start_soon(sb.exec, ["sh", "-c", daemon + f" sleep 60; : {marker}"])
            await anyio.sleep(60)
    anyio.run(main)
    """
)


@pytest.mark.escape(
    "Keep processes alive after the evaluator itself is killed (SIGKILL)",
    "bwrap --die-with-parent, and the exec service ends the sandbox when its channel closes",
)
def test_sandbox_processes_die_with_the_evaluator() -> None:
    marker = f"docket_evaluator_{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "DOCKET_MARKER": marker}
    evaluator = subprocess.Popen([sys.executable, "-c", EVALUATOR], cwd=PROJECT, env=env)
    try:
        deadline = time.monotonic() + 60
        while len(host_processes_matching(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(host_processes_matching(marker)) >= 2, "the sandbox's processes never started"
    finally:
        evaluator.kill()
        evaluator.wait()
    deadline = time.monotonic() + 5
    while host_processes_matching(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert host_processes_matching(marker) == []
