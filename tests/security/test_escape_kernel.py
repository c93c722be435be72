"""Escape attempts through kernel interfaces the seccomp filter closes: keyrings, ptrace, bpf, ...

Syscall numbers come from libseccomp on the host (`pyseccomp.resolve_syscall`), so the probes
inside the sandbox call exactly the syscalls the filter names.
"""

from __future__ import annotations

import ctypes
import errno
import json
import textwrap
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

LIMITS = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=4)
pyseccomp = pytest.importorskip("pyseccomp", exc_type=ImportError)

KEY_SPEC_SESSION_KEYRING = -3
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
TIOCSTI = 0x5412

#: (syscall, arguments): each must fail with EPERM under the default filter.
DENIED_CALLS: list[tuple[str, list[object]]] = [
    ("ptrace", [16, 1, 0, 0]),
    ("process_vm_readv", [1, 0, 0, 0, 0, 0]),
    ("keyctl", [0, KEY_SPEC_SESSION_KEYRING, 0]),
    ("add_key", ["user", "docket", "x", 1, KEY_SPEC_SESSION_KEYRING]),
    ("request_key", ["user", "docket", None, 0]),
    ("bpf", [0, 0, 0]),
    ("perf_event_open", [0, 0, -1, -1, 0]),
    ("userfaultfd", [0]),
    ("kexec_load", [0, 0, 0, 0]),
    ("init_module", [0, 0, ""]),
    ("finit_module", [-1, "", 0]),
    ("delete_module", ["x", 0]),
    ("mount", ["none", "/tmp", "tmpfs", 0, 0]),
    ("umount2", ["/tmp", 0]),
    ("pivot_root", ["/", "/"]),
    ("fsopen", ["tmpfs", 0]),
    ("swapon", ["/x", 0]),
    ("reboot", [0xFEE1DEAD, 672274793, 0x1234567, 0]),
    ("unshare", [CLONE_NEWUSER]),
    ("unshare", [CLONE_NEWNS]),
    ("setns", [-1, 0]),
    ("clone", [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0]),
    ("ioctl", [0, TIOCSTI, "x"]),
]

PROBE = textwrap.dedent(
    """
    import ctypes, json, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    out = []
    for name, number, args in json.loads(sys.stdin.read()):
        conv = [a.encode() if isinstance(a, str) else a for a in args]
        conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in conv]
        result = libc.syscall(number, *conv)
        out.append([name, result, ctypes.get_errno() if result == -1 else 0])
    print(json.dumps(out))
    """
)


def _numbered(calls: Sequence[tuple[str, Sequence[object]]]) -> str:
    arch = pyseccomp.system_arch()
    return json.dumps([[n, pyseccomp.resolve_syscall(arch, n), a] for n, a in calls])


@pytest.mark.escape(
    "Dangerous syscall families (ptrace, process_vm_*, keyctl/add_key/request_key, bpf, "
    "perf_event_open, userfaultfd, kexec/modules, mount/umount/pivot_root/fsopen, swap, "
    "reboot, unshare/setns/clone of namespaces, ioctl(TIOCSTI))",
    "docket's default seccomp profile (libseccomp, modelled on Docker's): EPERM",
)
async def test_default_filter_denies_the_dangerous_families() -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["python3", "-c", PROBE], input=_numbered(DENIED_CALLS), timeout=60)
        outcomes = json.loads(result.stdout)
        assert [(n, r, e) for n, r, e in outcomes if e != errno.EPERM] == []
        status = await sb.exec(["grep", "-E", "^(Seccomp|NoNewPrivs):", "/proc/self/status"])
        assert "Seccomp:\t2" in status.stdout and "NoNewPrivs:\t1" in status.stdout
        clone3 = await sb.exec(["python3", "-c", PROBE], input=_numbered([("clone3", [0, 0])]))
        assert json.loads(clone3.stdout)[0][2] == errno.ENOSYS  # glibc falls back to clone()
        assert (await sb.exec(["sh", "-c", "echo a | cat | wc -c"])).stdout == "2\n"


async def test_without_the_filter_the_kernel_answers_these_calls_itself() -> None:
    calls = [("ptrace", [2, 1, 0, 0]), ("keyctl", [0, KEY_SPEC_SESSION_KEYRING, 0])]
    async with bwrap_sandbox(BwrapConfig(seccomp="none")) as sb:
        result = await sb.exec(["python3", "-c", PROBE], input=_numbered(calls))
        (ptrace, keyctl) = json.loads(result.stdout)
        assert ptrace[2] == errno.ESRCH  # not our tracee, as the kernel says
        assert keyctl[2] != errno.EPERM


def _host_syscall(name: str, *args: object) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    conv = [a.encode() if isinstance(a, str) else a for a in args]
    number = pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)
    result = int(
        libc.syscall(number, *[ctypes.c_long(a) if isinstance(a, int) else a for a in conv])
    )
    if result == -1:
        raise OSError(ctypes.get_errno(), f"{name} failed")
    return result


@pytest.fixture
def planted_key() -> Iterator[tuple[str, str]]:
    """A secret in the evaluator's session keyring (as an API key would be), revoked after."""
    name, secret = f"docket-canary-{uuid.uuid4().hex[:8]}", f"sk-{uuid.uuid4().hex}"
    try:
        key = _host_syscall("add_key", "user", name, secret, len(secret), KEY_SPEC_SESSION_KEYRING)
    except OSError as ex:
        pytest.skip(f"no session keyring here ({ex})")
    yield name, secret
    _host_syscall("keyctl", 3, key)  # KEYCTL_REVOKE


READ_KEY = textwrap.dedent(
    """
    import ctypes, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    request_key, keyctl, add_key = (int(x) for x in sys.argv[2:5])
    key = libc.syscall(request_key, b"user", sys.argv[1].encode(), None, 0)
    print("request_key", key, ctypes.get_errno())
    buf = ctypes.create_string_buffer(256)
    if key > 0:
        n = libc.syscall(keyctl, 11, ctypes.c_long(key), buf, 256)  # KEYCTL_READ
        print("read", buf.raw[: max(n, 0)].decode(errors="replace"))
    if len(sys.argv) > 5:  # plant a key for a later sample
        print("add_key", libc.syscall(add_key, b"user", sys.argv[5].encode(), b"leak", 4,
              ctypes.c_long(-3)), ctypes.get_errno())
    """
)


@pytest.mark.escape(
    "Read the evaluator's session keyring (keyctl), and pass a key to a later sample",
    "seccomp denies keyctl/add_key/request_key; the exec service joins a fresh session keyring",
)
async def test_keyrings_are_out_of_reach(planted_key: tuple[str, str]) -> None:
    name, secret = planted_key
    arch = pyseccomp.system_arch()
    numbers = [
        str(pyseccomp.resolve_syscall(arch, n)) for n in ("request_key", "keyctl", "add_key")
    ]
    later = f"docket-later-{uuid.uuid4().hex[:8]}"
    async with bwrap_sandbox(LIMITS) as first:
        planted = await first.exec(["python3", "-c", READ_KEY, name, *numbers, later])
    async with bwrap_sandbox(LIMITS) as second:
        seen = await second.exec(["python3", "-c", READ_KEY, later, *numbers])
    for output in (planted.stdout, seen.stdout):
        assert secret not in output and "leak" not in output.replace("add_key", "")
        assert f"request_key -1 {errno.EPERM}" in output
    assert f"add_key -1 {errno.EPERM}" in planted.stdout


@pytest.fixture
def docker_profile(tmp_path: Path) -> Path:
    """A Docker-format profile that allows everything but mkdir/mkdirat."""
    path = tmp_path / "profile.json"
    path.write_text(
        json.dumps(
            {
                "defaultAction": "SCMP_ACT_ALLOW",
                "syscalls": [
                    {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}
                ],
            }
        )
    )
    path.chmod(0o644)
    return path


async def test_a_docker_format_profile_can_replace_the_default(docker_profile: Path) -> None:
    async with bwrap_sandbox(BwrapConfig(seccomp=str(docker_profile))) as sb:
        result = await sb.exec(["mkdir", "new"])
        assert not result.success and "Permission denied" in result.stderr
        assert (await sb.exec(["touch", "file"])).success
