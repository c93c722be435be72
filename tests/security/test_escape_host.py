"""What a sample can learn of the host or of other samples: identity, host paths, shared locks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from docket.sandboxes.bwrap.config import BwrapConfig
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

PROJECT = Path(__file__).resolve().parents[2]
LIMITS = BwrapConfig(memory_mb=256, max_processes=32, max_file_size_mb=4)
EVALUATOR_UID, GROUP_ID = 46_201, 46_202


@pytest.fixture
def group_only_tree() -> Iterator[Path]:
    """A world-readable dir holding files only group 46202 may read (as /etc/ssl/private)."""
    if os.geteuid() != 0:
        pytest.skip("only root can stage files and an evaluator of another uid")
    root = Path(tempfile.mkdtemp(prefix="docket-escape-groups-"))
    root.chmod(0o755)
    (root / "shared.txt").write_text("group secret")
    os.chown(root / "shared.txt", 0, GROUP_ID)
    (root / "shared.txt").chmod(0o640)
    private = root / "private"
    private.mkdir()
    (private / "key.pem").write_text("private key")
    os.chown(private, 0, GROUP_ID)
    private.chmod(0o710)
    os.chown(private / "key.pem", 0, GROUP_ID)
    (private / "key.pem").chmod(0o640)
    (root / "open.txt").write_text("public")
    (root / "open.txt").chmod(0o644)
    yield root
    shutil.rmtree(root)


#: Run by the system python3 as another uid (the venv's interpreter may sit under /root).
NON_ROOT_EVALUATOR = textwrap.dedent(
    """
    import site, sys
    site.addsitedir(sys.argv[2])
    import anyio
    from docket.sandboxes.bwrap.config import BwrapConfig
    from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment
    async def main():
        config = BwrapConfig(ro_binds={sys.argv[1]: "/data"})
        envs = await BwrapSandboxEnvironment.sample_init("docket-test", config, {})
        try:
            script = "id -G; cat /data/open.txt /data/shared.txt /data/private/key.pem"
            result = await envs["default"].exec(["sh", "-c", script])
            print(result.stdout)
        finally:
            await BwrapSandboxEnvironment.sample_cleanup("docket-test", config, envs, False)
    anyio.run(main)
    """
)


@pytest.mark.escape(
    "A non-root evaluator's supplementary groups reach group-readable host files",
    "files reachable only through a supplementary group are masked (the kernel keeps the "
    "groups in a user namespace); as root the sandbox runs with no groups at all",
)
def test_supplementary_groups_reach_nothing(group_only_tree: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="docket-escape-home-"))
    os.chown(home, EVALUATOR_UID, EVALUATOR_UID)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(home)}
    site_packages = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    closed = [
        d
        for d in (PROJECT, *PROJECT.parents, *Path(site_packages).parents)
        if d.stat().st_mode & 0o001 == 0
    ]
    if closed:
        pytest.skip(
            f"{closed[0]} is not searchable by another uid (the evaluator runs as {EVALUATOR_UID})"
        )
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not os.access(python, os.X_OK):
        pytest.skip(f"needs {python} (the venv's own Python version) for a non-root evaluator")
    result = subprocess.run(
        [python, "-c", NON_ROOT_EVALUATOR, str(group_only_tree), site_packages],
        user=EVALUATOR_UID,
        group=EVALUATOR_UID,
        extra_groups=[GROUP_ID],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    shutil.rmtree(home, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "public" in result.stdout
    assert "group secret" not in result.stdout and "private key" not in result.stdout


@pytest.mark.escape(
    "Read host paths (the checkout, sample directories) from /proc/1/cmdline and friends",
    "bwrap's options travel in a memfd (--args); pid 1 is the exec service; no sample "
    "directory exists on the host",
)
async def test_host_paths_are_not_in_proc() -> None:
    script = (
        "cat /proc/1/cmdline /proc/1/environ /proc/self/mountinfo /proc/self/cgroup; "
        "for f in /proc/[0-9]*/cmdline; do cat $f; echo; done"
    )
    async with bwrap_sandbox(LIMITS) as sb:
        result = await sb.exec(["sh", "-c", script])
    assert result.success and "execd.py" in result.stdout
    for host_path in (str(PROJECT), "docket-bwrap-", sys.prefix):
        assert host_path not in result.stdout, host_path


LOCK = textwrap.dedent(
    """
    import fcntl, sys, time
    held = []
    for path in sys.argv[2:]:
        f = open(path, "rb")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(f)
            print(path, "locked", flush=True)
        except OSError:
            print(path, "busy", flush=True)
    time.sleep(float(sys.argv[1]))
    """
)


@pytest.fixture
def shared_data() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="docket-escape-locks-"))
    folder.chmod(0o755)
    (folder / "corpus.txt").write_text("shared")
    (folder / "corpus.txt").chmod(0o644)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.escape(
    "Signal another sample through flock on shared read-only files (/usr, /etc, ro_binds)",
    "host directories are read-only overlays, host /etc files private copies: every sample "
    "has its own inodes, so its locks are its own",
)
async def test_samples_cannot_signal_each_other_through_locks(shared_data: Path) -> None:
    files = ["/usr/bin/env", "/etc/ld.so.cache", "/etc/protocols", "/data/corpus.txt"]
    config = BwrapConfig(**{**LIMITS.model_dump(), "ro_binds": {str(shared_data): "/data"}})
    async with bwrap_sandbox(config) as first, bwrap_sandbox(config) as second:
        outputs: dict[str, str] = {}

        async def hold() -> None:
            outputs["first"] = (await first.exec(["python3", "-c", LOCK, "3", *files])).stdout

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            await anyio.sleep(1.5)
            outputs["second"] = (await second.exec(["python3", "-c", LOCK, "0", *files])).stdout
    for name in ("first", "second"):
        assert outputs[name].split() == [w for f in files for w in (f, "locked")], outputs


@pytest.mark.xfail(reason="device nodes are the host's (no private /dev/null inode)", strict=True)
@pytest.mark.escape(
    "Signal another sample through flock on /dev/null",
    "known gap: bwrap binds the host's device nodes, whose inodes every sample shares",
)
async def test_device_node_locks_are_shared() -> None:
    async with bwrap_sandbox(LIMITS) as first, bwrap_sandbox(LIMITS) as second:
        outputs: dict[str, str] = {}

        async def hold() -> None:
            outputs["first"] = (await first.exec(["python3", "-c", LOCK, "3", "/dev/null"])).stdout

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            await anyio.sleep(1.5)
            result = await second.exec(["python3", "-c", LOCK, "0", "/dev/null"])
            outputs["second"] = result.stdout
    assert "/dev/null locked" in outputs["second"]
