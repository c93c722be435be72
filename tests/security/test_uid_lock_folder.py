"""Uid leases cannot collide (#52 item 4): one fixed, root-owned lock folder whatever `TMPDIR`
says, checked before use, and the overlay's empty folder checked before it is mounted."""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from docket.core.inspect_private import PrerequisiteError
from docket.sandboxes.bwrap import layout, uids
from docket.sandboxes.bwrap.config import parse_config

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="uid leases are only made as root")

#: Ranges of their own, so these tests never meet other tests' or running sandboxes' leases.
ONE_UID = [1_600_100_000, 1_600_100_000]
SIX_UIDS = [1_600_100_010, 1_600_100_015]

#: An evaluator in a process of its own: leases one uid, prints it, holds it until stdin closes.
EVALUATOR = """
import sys
from docket.core.inspect_private import PrerequisiteError
from docket.sandboxes.bwrap import uids
from docket.sandboxes.bwrap.config import parse_config
config = parse_config({"host_uid_range": [%d, %d], "require": ["seccomp", "uid"]})
try:
    lease = uids.lease_uid(config)
    print(lease.uid, lease.shared, flush=True)
except PrerequisiteError as error:
    print("refused:", error, flush=True)
sys.stdin.read()
"""


def _evaluator(tmpdir: Path, uid_range: list[int]) -> subprocess.Popen[str]:
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": os.getcwd()}
    return subprocess.Popen(
        [sys.executable, "-c", EVALUATOR % tuple(uid_range)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@as_root
def test_two_evaluators_with_different_tmpdirs_never_share_a_uid(tmp_path: Path) -> None:
    first = _evaluator(tmp_path / "a", ONE_UID)
    second = None
    try:
        assert first.stdout is not None
        assert first.stdout.readline().split() == [str(ONE_UID[0]), "False"]
        second = _evaluator(tmp_path / "b", ONE_UID)
        assert second.stdout is not None
        line = second.stdout.readline()
        # Before: its lock folder was under its own TMPDIR, so it leased 1600100000 too.
        assert line.startswith("refused: The bwrap sandbox cannot give this sample its own host")
        assert "all 1 uids of host_uid_range 1600100000-1600100000 are in use" in line
    finally:
        for process in (first, second):
            if process is not None:
                process.communicate("")


def _lease_at_the_barrier(
    barrier: multiprocessing.synchronize.Barrier,
    tmpdir: str,
    results: multiprocessing.queues.Queue[int | None],
) -> None:
    os.environ["TMPDIR"] = tmpdir
    config = parse_config({"host_uid_range": SIX_UIDS, "require": ["seccomp", "uid"]})
    barrier.wait()
    lease = uids.lease_uid(config)
    results.put(None if lease.shared else lease.uid)
    barrier.wait()  # hold the lease until every process has one
    lease.release()


@as_root
def test_processes_started_at_the_same_moment_lease_distinct_uids(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    count = SIX_UIDS[1] - SIX_UIDS[0] + 1
    barrier = context.Barrier(count)
    results: multiprocessing.queues.Queue[int | None] = context.Queue()
    processes = [
        context.Process(
            target=_lease_at_the_barrier, args=(barrier, str(tmp_path / f"t{n}"), results)
        )
        for n in range(count)
    ]
    for process in processes:
        process.start()
    leased = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert sorted(uid or 0 for uid in leased) == list(range(SIX_UIDS[0], SIX_UIDS[1] + 1))


@as_root
def test_the_lock_folder_is_fixed_root_owned_and_private() -> None:
    folder = uids._lock_dir()
    assert folder == Path("/run/docket/uids")
    info = folder.lstat()
    assert (info.st_uid, info.st_mode & 0o077) == (0, 0)


@pytest.mark.parametrize("plant", ["world-writable", "group-writable", "symlink", "other owner"])
@as_root
def test_a_planted_lock_folder_is_refused(
    plant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    root = run / "docket"
    if plant == "symlink":
        (tmp_path / "elsewhere").mkdir()
        root.symlink_to(tmp_path / "elsewhere")
    else:
        root.mkdir()
        root.chmod({"world-writable": 0o777, "group-writable": 0o775}.get(plant, 0o755))
        if plant == "other owner":
            os.chown(root, 65534, 65534)
    monkeypatch.setattr(uids, "LOCK_ROOT", root)
    with pytest.raises(
        PrerequisiteError, match=f"uid lock folder {root} must be a directory owned"
    ):
        uids._lock_dir()
    assert not (tmp_path / "elsewhere" / "uids").exists()  # nothing made through the symlink


@as_root
def test_a_missing_lock_folder_is_made_root_owned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uids, "LOCK_ROOT", tmp_path / "run" / "docket")
    (tmp_path / "run").mkdir(mode=0o755)
    folder = uids._lock_dir()
    assert folder == tmp_path / "run" / "docket" / "uids"
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_non_root_evaluator_leases_nothing_and_makes_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1234)
    monkeypatch.setattr(uids, "LOCK_ROOT", tmp_path / "docket")
    lease = uids.lease_uid(parse_config({}))
    assert (lease.uid, lease.shared) == (None, True)
    assert not (tmp_path / "docket").exists()


# -- the overlay's empty upper layer ------------------------------------------------------


@pytest.fixture
def tmpdir_of_ours(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh TMPDIR for `empty_dir` (its cache cleared before and after)."""
    monkeypatch.setattr(layout.tempfile, "gettempdir", lambda: str(tmp_path))
    layout.empty_dir.cache_clear()
    yield tmp_path
    layout.empty_dir.cache_clear()


def test_the_empty_folder_is_made_ours_and_readable(tmpdir_of_ours: Path) -> None:
    folder = Path(layout.empty_dir())
    assert folder == tmpdir_of_ours / f"docket-bin-{os.getuid()}" / "empty"
    for path in (folder, folder.parent):
        info = path.lstat()
        assert (info.st_uid, info.st_mode & 0o777) == (os.getuid(), 0o755)


def test_a_symlinked_empty_folder_is_refused(tmpdir_of_ours: Path) -> None:
    planted = tmpdir_of_ours / "planted"
    planted.mkdir()
    parent = tmpdir_of_ours / f"docket-bin-{os.getuid()}"
    parent.mkdir(mode=0o755)
    (parent / "empty").symlink_to(planted)  # filled later, it would show in every /usr
    with pytest.raises(PrerequisiteError, match=r"overlay folder .*/empty must be a directory"):
        layout.empty_dir()


def test_a_world_writable_parent_is_refused_not_repaired(tmpdir_of_ours: Path) -> None:
    parent = tmpdir_of_ours / f"docket-bin-{os.getuid()}"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(PrerequisiteError, match=f"overlay folder {parent} must be a directory"):
        layout.empty_dir()
    assert parent.stat().st_mode & 0o777 == 0o777  # before: chmod-ed to 0o755 and used


@as_root
def test_a_parent_another_user_made_first_is_refused(tmpdir_of_ours: Path) -> None:
    parent = tmpdir_of_ours / f"docket-bin-{os.getuid()}"
    (parent / "empty").mkdir(parents=True)
    os.chown(parent, 65534, 65534)
    os.chown(parent / "empty", 65534, 65534)
    with pytest.raises(PrerequisiteError, match=f"overlay folder {parent} must be a directory"):
        layout.empty_dir()


def test_a_filled_empty_folder_is_refused(tmpdir_of_ours: Path) -> None:
    folder = tmpdir_of_ours / f"docket-bin-{os.getuid()}" / "empty"
    folder.mkdir(parents=True)
    (folder / "python3").write_text("planted")
    with pytest.raises(PrerequisiteError, match="must stay empty"):
        layout.empty_dir()
