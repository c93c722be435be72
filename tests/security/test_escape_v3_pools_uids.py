"""Host uid leases (v3): distinct per concurrent sample, exclusive across evaluators, and the
one-line refusals where a host cannot give them (the lock folder's checks:
test_uid_lock_folder.py)."""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess

import pytest

from docket.core.inspect_private import PrerequisiteError
from docket.sandboxes.bwrap import uids
from docket.sandboxes.bwrap.config import BwrapConfigError, parse_config

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="uid leases are only made as root")

#: A small range of its own, so these tests never meet the leases of running sandboxes.
RANGE = [1_600_000_000, 1_600_000_002]


def test_require_uid_with_host_uid_is_a_config_error() -> None:
    with pytest.raises(BwrapConfigError, match="require lists uid but host_uid is set"):
        parse_config({"host_uid": 65534, "require": ["uid"]})


@pytest.mark.parametrize("bad", [[5, 4], [0, 3], [1, 1 << 32]])
def test_bad_uid_range_is_a_config_error(bad: list[int]) -> None:
    with pytest.raises(BwrapConfigError, match="host_uid_range"):
        parse_config({"host_uid_range": bad})


@as_root
def test_leases_are_distinct_until_released_and_then_reused() -> None:
    config = parse_config({"host_uid_range": RANGE, "require": ["seccomp", "uid"]})
    leases = [uids.lease_uid(config) for _ in range(3)]
    assert sorted(lease.uid or 0 for lease in leases) == list(range(RANGE[0], RANGE[1] + 1))
    assert not any(lease.shared for lease in leases)
    with pytest.raises(PrerequisiteError, match="all 3 uids of host_uid_range .* are in use"):
        uids.lease_uid(config)
    freed = leases.pop(1)
    freed.release()
    again = uids.lease_uid(config)
    assert again.uid == freed.uid
    for lease in [*leases, again]:
        lease.release()


@as_root
def test_a_uid_another_evaluator_holds_is_skipped() -> None:
    config = parse_config({"host_uid_range": RANGE})
    folder = uids._lock_dir()
    other = os.open(folder / str(RANGE[0]), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(other, fcntl.LOCK_EX)  # another open file description: another evaluator
    try:
        lease = uids.lease_uid(config)
        assert lease.uid is not None and lease.uid != RANGE[0]
        lease.release()
    finally:
        os.close(other)


@as_root
def test_range_used_up_without_require_shares_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = parse_config({"host_uid_range": [RANGE[0], RANGE[0]]})
    held = uids.lease_uid(config)
    with caplog.at_level(logging.WARNING):
        shared = uids.lease_uid(config)
    assert (shared.uid, shared.shared) == (RANGE[0], True)
    assert "share uid 1600000000 and its per-uid pools" in caplog.text
    held.release()


def test_not_root_refuses_require_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1234)
    with pytest.raises(PrerequisiteError, match="docket runs as uid 1234, not root"):
        uids.check_uid_support(parse_config({"require": ["seccomp", "uid"]}))
    assert uids.lease_uid(parse_config({})).uid is None


def test_explicit_host_uid_says_once_that_samples_share_it(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    config = parse_config({"host_uid": 4242})
    with caplog.at_level(logging.WARNING):
        uids.check_uid_support(config)
    assert "share one host uid (host_uid is set to 4242)" in caplog.text
    lease = uids.lease_uid(config)
    assert (lease.uid, lease.shared) == (4242, True)


@as_root
def test_a_uid_a_running_process_holds_is_skipped() -> None:
    config = parse_config({"host_uid_range": RANGE})
    squatter = subprocess.Popen(["sleep", "30"], user=RANGE[0], group=RANGE[0], extra_groups=[])
    uids._scanned.clear()  # a fresh scan of /proc, not one from before the squatter
    try:
        leases = [uids.lease_uid(config) for _ in range(2)]
        assert sorted(lease.uid or 0 for lease in leases) == [RANGE[0] + 1, RANGE[0] + 2]
        for lease in leases:
            lease.release()
    finally:
        squatter.kill()
        squatter.wait()
        uids._scanned.clear()
