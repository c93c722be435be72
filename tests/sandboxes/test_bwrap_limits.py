"""Which limits a host enforces: seccomp compilation, cgroup detection, `require` and warnings."""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from docket.core.inspect_private import PrerequisiteError, inspect_logger
from docket.sandboxes.bwrap import cgroup, probe, seccomp
from docket.sandboxes.bwrap.config import BwrapConfig
from docket.sandboxes.bwrap.layout import BwrapBinary

BINARY = BwrapBinary("/usr/bin/bwrap-test", disable_userns=True)


def test_default_profile_denies_the_issue_families_and_allows_the_basics() -> None:
    profile = seccomp.default_profile()
    actions: dict[str, set[str]] = {}
    for rules in profile.programs:
        for rule in rules:
            actions.setdefault(rule.syscall, set()).add(rule.action)
    denied = f"errno:{errno.EPERM}"
    for name in ("ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key"):
        assert actions[name] == {denied}, name
    for name in ("request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load"):
        assert actions[name] == {denied}, name
    for name in ("init_module", "mount", "pivot_root", "swapon", "reboot", "unshare", "setns"):
        assert actions[name] == {denied}, name
    assert profile.default == denied
    for name in ("read", "execve", "openat", "fork", "wait4", "socket", "flock"):
        assert "allow" in actions[name], name
    assert actions["clone3"] == {f"errno:{errno.ENOSYS}"}
    [clone] = [r for r in profile.programs[0] if r.syscall == "clone"]
    assert clone.args == ((0, "masked_eq", 0, seccomp.CLONE_NAMESPACE_FLAGS),)
    terminal = {r.args[0][2] for r in profile.programs[1] if r.syscall == "ioctl"}
    assert terminal == {seccomp.TIOCSTI, seccomp.TIOCLINUX}


def test_default_profile_compiles_to_bpf() -> None:
    pytest.importorskip("pyseccomp", exc_type=ImportError)
    programs = seccomp.compile_profile("default")
    assert len(programs) == 2 and all(len(p) % 8 == 0 and len(p) > 8 for p in programs)


def test_docker_profile_format(tmp_path: Path) -> None:
    data = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "syscalls": [
            {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
            {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_BPF"]}},
            {
                "names": ["clone"],
                "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": 2114060288, "op": "SCMP_CMP_MASKED_EQ"}],
            },
            {"names": ["mkdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13},
        ],
    }
    profile = seccomp.docker_profile(data)
    assert profile.default == "errno:1"
    rules = {(r.syscall, r.action, r.args) for r in profile.programs[0]}
    assert ("read", "allow", ()) in rules and ("mkdir", "errno:13", ()) in rules
    assert ("clone", "allow", ((0, "masked_eq", 0, 2114060288),)) in rules
    assert not any(r.syscall == "bpf" for r in profile.programs[0])  # needs a capability
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert seccomp.load_profile(str(path)) == profile


@pytest.mark.parametrize("content", ["{not json", '{"syscalls": []}', "[]"])
def test_a_bad_profile_file_is_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(seccomp.SeccompError) as info:
        seccomp.load_profile(str(path))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_libseccomp_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise seccomp.SeccompError("The bwrap sandbox's seccomp filter needs libseccomp ...")

    monkeypatch.setattr(seccomp, "_libseccomp", missing)
    seccomp.compile_profile.cache_clear()
    try:
        with pytest.raises(PrerequisiteError, match="needs libseccomp"):
            probe.host_limits(BwrapConfig(), BINARY)  # seccomp is required by default
    finally:
        seccomp.compile_profile.cache_clear()


def test_a_refused_filter_stops_or_warns_by_require(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(inspect_logger, "_warned", [])
    monkeypatch.setitem(probe._SECCOMP_REFUSED, BINARY.path, "the kernel refused the filter")
    monkeypatch.setattr(probe, "detect", lambda: cgroup.CgroupSupport(1, (Path("/x"),)))
    with pytest.raises(PrerequisiteError) as info:
        probe.host_limits(BwrapConfig(), BINARY)
    assert "seccomp" in str(info.value.message) and "\n" not in str(info.value.message)
    with caplog.at_level(logging.WARNING):
        limits = probe.host_limits(BwrapConfig(require=[]), BINARY)
        probe.host_limits(BwrapConfig(require=[]), BINARY)
    assert limits.seccomp == ()
    warnings = [r.message for r in caplog.records if "no seccomp" in r.message]
    assert len(warnings) == 1 and "the kernel refused the filter" in warnings[0]


def test_missing_cgroup_stops_only_when_required(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    absent = cgroup.CgroupSupport(
        0, (), "cgroup v1 memory at /sys/fs/cgroup/memory/x is not writable"
    )
    monkeypatch.setattr(probe, "detect", lambda: absent)
    config = BwrapConfig(seccomp="none", require=["cgroup"])
    with pytest.raises(PrerequisiteError) as info:
        probe.host_limits(config, BINARY)
    message = str(info.value.message)
    assert "not writable" in message and "require" in message and "\n" not in message
    with caplog.at_level(logging.WARNING):
        assert not probe.host_limits(BwrapConfig(seccomp="none"), BINARY).cgroups.available
        probe.host_limits(BwrapConfig(seccomp="none"), BINARY)
    [warning] = [r.message for r in caplog.records if "no cgroup" in r.message]
    assert "not writable" in warning and "RLIMIT_AS" in warning


@pytest.fixture
def delegated_v2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in for a delegated cgroup v2 directory (plain files in a temp dir)."""
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
    monkeypatch.setenv(cgroup.CGROUP_ENV, str(tmp_path))
    cgroup.detect.cache_clear()
    yield tmp_path
    cgroup.detect.cache_clear()


def test_v2_sample_cgroup_limits_attach_and_removal(delegated_v2: Path) -> None:
    support = cgroup.detect()
    assert support.version == 2 and support.parents == (delegated_v2,)
    sample = cgroup.SampleCgroup(support, memory_mb=128, max_tasks=40, agent_tasks=16)
    [path] = sample.paths
    assert (path / "memory.max").read_text() == str(128 << 20)
    assert (path / "memory.swap.max").read_text() == "0"
    assert (path / "pids.max").read_text() == "40"
    assert (path / "cgroup.subtree_control").read_text() == "+pids"
    assert (path / "agent" / "pids.max").read_text() == "16"
    sample.attach(4242)  # v2: no process in a cgroup with controllers for its children
    assert (path / "service" / "cgroup.procs").read_text() == "4242"
    assert not (path / "cgroup.procs").exists()
    written = ["memory.max", "memory.swap.max", "pids.max", "cgroup.subtree_control"]
    for name in [*written, "agent/pids.max", "service/cgroup.procs"]:
        (path / name).unlink()  # a real cgroupfs removes its files itself
    assert sample.remove() == []
    assert not path.exists()


def test_v2_without_delegated_controllers_says_which(
    delegated_v2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (delegated_v2 / "cgroup.subtree_control").write_text("cpu\n")
    monkeypatch.setattr(cgroup, "_v1", lambda: "no cgroup v1 memory controller")
    support = cgroup.detect()
    assert not support.available
    assert "does not delegate memory/pids" in support.reason and cgroup.CGROUP_ENV in support.reason
