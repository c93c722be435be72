"""What the bwrap sandbox isolates: filesystem, network, host paths, identity, rlimits."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from docket.sandboxes.bwrap.config import BwrapConfig, BwrapConfigError
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

PROJECT = Path(__file__).resolve().parents[2]


async def test_workspace_is_default_cwd_and_persists() -> None:
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["pwd"])).stdout == "/workspace\n"
        await sb.write_file("sub/note.txt", "kept")
        assert (await sb.exec(["cat", "note.txt"], cwd="sub")).stdout == "kept"
        assert (await sb.exec(["cat", "/workspace/sub/note.txt"])).stdout == "kept"
        assert (await sb.exec(["sh", "-c", "echo t > /tmp/t; echo h > ~/h"])).success
        assert (
            await sb.exec(["cat", "/tmp/t", "/var/tmp/t", "/home/agent/h"])
        ).stdout == "t\nt\nh\n"


async def test_writes_outside_workspace_and_tmp_fail() -> None:
    async with bwrap_sandbox() as sb:
        for target in ("/x", "/etc/x", "/usr/x", "/usr/bin/x", "/opt/x", "/proc/x", "/home/x"):
            result = await sb.exec(["touch", target])
            assert not result.success, target
        with pytest.raises(PermissionError):
            await sb.write_file("/usr/local/x", "no")


async def test_system_tools_work() -> None:
    async with bwrap_sandbox() as sb:
        script = "echo $BASH_VERSION >/dev/null && python3 -c 'print(6*7)' && ls / | wc -l"
        result = await sb.exec(["bash", "-c", script])
        assert result.success, result.stderr
        assert result.stdout.startswith("42\n")


async def test_no_network_only_loopback() -> None:
    code = (
        "import socket\n"
        "print(sorted(n for _, n in socket.if_nameindex()))\n"
        "s = socket.socket(); s.settimeout(2)\n"
        "try:\n    s.connect(('1.1.1.1', 53)); print('connected')\n"
        "except OSError as e:\n    print('blocked', e.errno)\n"
    )
    async with bwrap_sandbox() as sb:
        result = await sb.exec(["python3", "-c", code], timeout=20)
        assert result.stdout.splitlines() == ["['lo']", "blocked 101"], result


async def test_namespaces_hostname_and_clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_HOST_SECRET", "leak")
    async with bwrap_sandbox() as sb:
        result = await sb.exec(["sh", "-c", "hostname; ls /proc | grep -c '^[0-9]'; env"])
        lines = result.stdout.splitlines()
        assert lines[0] == "sandbox"
        assert int(lines[1]) < 8  # own pid namespace: only this command's processes
        env = dict(line.split("=", 1) for line in lines[2:] if "=" in line)
        assert "DOCKET_HOST_SECRET" not in env
        assert env["HOME"] == "/home/agent" and env["LANG"] == "C.UTF-8"
        assert "/usr/bin" in env["PATH"]


async def test_host_paths_hidden() -> None:
    async with bwrap_sandbox() as sb:
        sandbox_paths = {"/", "/tmp", "/workspace", "/home/agent"}
        for path in ("/root", str(PROJECT.parent), str(PROJECT), os.path.expanduser("~")):
            if path in sandbox_paths:
                continue
            result = await sb.exec(["ls", path])
            assert not result.success, f"{path} is visible: {result.stdout}"
        assert (await sb.exec(["ls", "/home"])).stdout == "agent\n"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A world-readable host dir (as root the sandbox runs as an unprivileged host uid)."""
    path = Path(tempfile.mkdtemp(prefix="docket-test-ro-"))
    path.chmod(0o755)
    (path / "data.txt").write_text("corpus")
    (path / "data.txt").chmod(0o644)
    yield path
    shutil.rmtree(path)


async def test_ro_binds_are_visible_and_read_only(shared_dir: Path) -> None:
    config = BwrapConfig(ro_binds={str(shared_dir): "/data"}, host_uid=65534)
    async with bwrap_sandbox(config) as sb:
        assert await sb.read_file("/data/data.txt") == "corpus"
        assert not (await sb.exec(["touch", "/data/new"])).success
        assert not (await sb.exec(["ls", str(shared_dir)])).success
    async with bwrap_sandbox(BwrapConfig(ro_binds=[str(shared_dir)])) as sb:
        assert (await sb.exec(["cat", f"{shared_dir}/data.txt"])).stdout == "corpus"


@pytest.mark.skipif(os.geteuid() != 0, reason="host-uid readability only applies as root")
async def test_ro_binds_unreadable_by_host_uid_is_a_clear_error(shared_dir: Path) -> None:
    shared_dir.chmod(0o700)
    with pytest.raises(BwrapConfigError, match=r"not readable by host uid 15000\d{5}\b"):
        async with bwrap_sandbox(BwrapConfig(ro_binds=[str(shared_dir)])):
            pass


async def test_runs_as_unprivileged_agent() -> None:
    async with bwrap_sandbox() as sb:
        result = await sb.exec(["sh", "-c", "whoami; id -u; id -g; grep CapEff /proc/self/status"])
        assert result.stdout.splitlines()[:3] == ["agent", "1000", "1000"]
        assert result.stdout.splitlines()[3].split()[1] == "0000000000000000"
        assert (await sb.exec(["whoami"], user="agent")).stdout == "agent\n"


async def test_fork_bomb_is_contained() -> None:
    config = BwrapConfig(max_processes=32)
    async with bwrap_sandbox(config) as sb:
        count = (
            "import os, time\nn = 0\nfor _ in range(200):\n"
            "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
            "    if pid == 0:\n        time.sleep(3); os._exit(0)\n    n += 1\nprint(n)\n"
        )
        started = int((await sb.exec(["python3", "-c", count], timeout=30)).stdout)
        assert 0 < started < 32
        # the classic bomb: stuck at the limit until the timeout kills its namespace
        with pytest.raises(TimeoutError):
            await sb.exec(["bash", "-c", "b(){ b | b & }; b; sleep 60"], timeout=2)
        assert (await sb.exec(["true"])).success


async def test_memory_limit() -> None:
    async with bwrap_sandbox(BwrapConfig(memory_mb=256)) as sb:
        result = await sb.exec(["python3", "-c", "b = bytearray(512 * 1024 * 1024)"])
        assert not result.success and "MemoryError" in result.stderr
        assert (await sb.exec(["python3", "-c", "b = bytearray(64 * 1024 * 1024)"])).success


async def test_file_size_limit() -> None:
    async with bwrap_sandbox(BwrapConfig(max_file_size_mb=1)) as sb:
        result = await sb.exec(["sh", "-c", "head -c 2000000 /dev/zero > big"])
        assert not result.success
        assert int((await sb.exec(["stat", "-c", "%s", "big"])).stdout) <= 1024 * 1024
        with pytest.raises(OSError, match="File too large"):
            await sb.write_file("big2", b"x" * 2_000_000)
