"""Escape attempts on the filesystem: host secrets, other samples, writes, symlink/`..` tricks."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

PROJECT = Path(__file__).resolve().parents[2]
#: Small limits: every attempt stays cheap for the host even if a guard were missing.
LIMITS = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=4)
NOT_MOUNTED = "not mounted: only /usr, /bin, /lib*, /sbin and listed /etc entries are mounted"


@pytest.fixture
def host_canary() -> Iterator[Path]:
    """A world-readable host file outside every sandbox (as root, readable by the host uid)."""
    folder = Path(tempfile.mkdtemp(prefix="docket-escape-canary-"))
    folder.chmod(0o755)
    secret = folder / "secret.txt"
    secret.write_text(f"canary-{uuid.uuid4().hex}")
    secret.chmod(0o644)
    yield secret
    shutil.rmtree(folder)


async def _visible(sb: BwrapSandboxEnvironment, path: str) -> bool:
    result = await sb.exec(["sh", "-c", 'ls -d -- "$1" && cat -- "$1" 2>/dev/null; :', "x", path])
    return bool(result.stdout.strip())


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/root", marks=pytest.mark.escape("Read /root", NOT_MOUNTED)),
        pytest.param(
            str(Path.home()), marks=pytest.mark.escape("Read the host user's home", NOT_MOUNTED)
        ),
        pytest.param(
            str(PROJECT / "pyproject.toml"),
            marks=pytest.mark.escape(f"Read the project checkout ({PROJECT})", NOT_MOUNTED),
        ),
        pytest.param("/etc/shadow", marks=pytest.mark.escape("Read /etc/shadow", NOT_MOUNTED)),
    ],
)
async def test_host_secrets_are_not_visible(path: str) -> None:
    assert Path(path).exists(), f"the host has no {path} to protect"
    async with bwrap_sandbox(LIMITS) as sb:
        assert not await _visible(sb, path)
        home = await sb.exec(["ls", "-A", "/home"])
        assert home.stdout == "agent\n"


@pytest.mark.escape(
    "Read a host temp file by its host path",
    "/tmp is the sample's own tmpfs, not the host's /tmp",
)
async def test_host_temp_files_are_not_visible(host_canary: Path) -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        assert not await _visible(sb, str(host_canary))
        with pytest.raises(FileNotFoundError):
            await sb.read_file(str(host_canary))


@pytest.mark.escape(
    "Read the host's environment (/proc/1/environ, /proc/*/environ)",
    "pid namespaces (/proc/1 is the exec's own init); bwrap --clearenv and a fixed env",
)
async def test_host_environment_is_not_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("DOCKET_ESCAPE_CANARY", canary)
    script = "cat /proc/1/environ /proc/1/cmdline; for f in /proc/[0-9]*/environ; do cat $f; done"
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["sh", "-c", script + "; echo; env"])
        init = "execinit" if sb.session.native else "execd.py"  # the exec's own pid 1
    assert canary not in result.stdout
    assert "DOCKET_ESCAPE_CANARY" not in result.stdout
    host_init = Path("/proc/1/cmdline").read_bytes().split(b"\0")[0].decode()
    assert init in result.stdout and host_init not in result.stdout.split(init)[0]


@pytest.mark.escape(
    "Read another sample's workspace (by its path and by searching /)",
    "each sample's files are on its own tmpfs, mounted only in its own mount namespace",
)
async def test_other_samples_workspace_is_not_visible() -> None:
    secret = f"secret-{uuid.uuid4().hex}.txt"
    async with bwrap_sandbox(LIMITS) as other, bwrap_sandbox(LIMITS) as sb:
        await other.write_file(secret, "the other sample's data")
        assert await other.read_file(secret) == "the other sample's data"
        assert not await _visible(sb, f"/workspace/{secret}")
        with pytest.raises(FileNotFoundError):
            await sb.read_file(f"/workspace/{secret}")
        # everything but the read-only system binds (host /usr, /lib*) and kernel filesystems
        skip = " -o ".join(f"-path '{p}'" for p in ("/usr", "/lib*", "/proc", "/dev", "/sys"))
        search = f"find / \\( {skip} \\) -prune -o -name "
        await sb.write_file(f"{secret}.own", "this sample's own copy, which find must see")
        found = await sb.exec(["sh", "-c", f"{search}'{secret}*' -print 2>/dev/null"], timeout=60)
        assert found.stdout == f"/workspace/{secret}.own\n"


WRITE_TARGETS = ["/x", "/etc/passwd", "/usr/bin/x", "/opt/x", "/root/x", "/proc/sys/kernel/x"]


@pytest.mark.escape(
    "Write outside the workspace (/, /etc, /usr, /opt, /root, /proc/sys, the host's /tmp)",
    "root is remounted read-only; only /workspace, /tmp and $HOME (all per-sample) are writable",
)
async def test_writes_outside_the_workspace_fail(host_canary: Path) -> None:
    name = f"docket-escape-{uuid.uuid4().hex[:10]}"
    targets = [*(t.replace("x", name) if t.endswith("/x") else t for t in WRITE_TARGETS)]
    # a checkout under /tmp (as CI's may be) is shadowed by the sandbox's own /tmp there: a
    # write to that path succeeds inside and must not reach the host (checked below)
    project_target = str(PROJECT / name)
    if not PROJECT.is_relative_to("/tmp"):
        targets.append(project_target)
    async with bwrap_sandbox(LIMITS) as sb:
        for target in targets:
            result = await sb.exec(["sh", "-c", 'echo pwned > "$1"', "x", target])
            assert not result.success, target
            with pytest.raises(OSError):
                await sb.write_file(target, "pwned")
        # the sandbox's /tmp is its own: writes there never reach the host's /tmp
        await sb.write_file(str(host_canary), "pwned")
        assert (await sb.exec(["sh", "-c", f"echo pwned > /tmp/{name}"])).success
        assert (await sb.exec(["cat", f"/tmp/{name}"])).stdout == "pwned\n"
    for target in [*targets, project_target]:
        host = Path(target)
        assert not host.exists() or b"pwned" not in host.read_bytes(), target
    assert not (Path(tempfile.gettempdir()) / name).exists()
    assert host_canary.read_text().startswith("canary-")


@pytest.mark.escape(
    "`..` and symlink tricks through read_file/write_file",
    "file operations run inside the sandbox as the agent, so paths resolve in its mount tree",
)
async def test_dotdot_and_symlinks_stay_inside(host_canary: Path) -> None:
    async with bwrap_sandbox(LIMITS) as sb:
        with pytest.raises(FileNotFoundError):
            await sb.read_file("../../../../../etc/shadow")
        passwd = await sb.read_file("../../etc/passwd")  # the sandbox's own, not the host's
        assert passwd.count("\n") == 3 and passwd != Path("/etc/passwd").read_text()
        links = (
            f"ln -s {PROJECT}/pyproject.toml project; ln -s / root; "
            f"ln -s {host_canary} canary; ln -s /proc/1/root/etc/shadow via_proc"
        )
        assert (await sb.exec(["sh", "-c", links])).success
        for link in ("project", "root/root/.bashrc", "canary"):
            with pytest.raises(FileNotFoundError):
                await sb.read_file(link)
        with pytest.raises((FileNotFoundError, PermissionError)):
            await sb.read_file("via_proc")
        for target in ("root/usr/bin/pwned", "../../usr/lib/pwned", "root/etc/passwd"):
            with pytest.raises(PermissionError):
                await sb.write_file(target, "pwned")
        with pytest.raises(OSError):
            await sb.write_file("canary", "pwned")  # dangling link inside: the host file is safe
    assert "pwned" not in host_canary.read_text()
    assert not (PROJECT / "pwned").exists()


@pytest.mark.escape(
    "Trick the host-side cleanup into deleting or chmod-ing host files through symlinks",
    "nothing of a sample is on the host disk: cleanup kills the sandbox and deletes no path",
)
async def test_cleanup_does_not_follow_symlinks(host_canary: Path) -> None:
    folder = host_canary.parent
    mode = folder.stat().st_mode
    async with bwrap_sandbox(LIMITS) as sb:
        plant = (
            f"ln -s {folder} dir_link; ln -s {host_canary} file_link; "
            f"mkdir -p ro/sub; ln -s {folder} ro/sub/link; chmod -R a-w ro"
        )
        assert (await sb.exec(["sh", "-c", plant])).success
    assert host_canary.read_text().startswith("canary-")
    assert folder.stat().st_mode == mode
