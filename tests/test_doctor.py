"""`docket doctor`: one line per finding with its fix, exit 1 only for what blocks the run."""

from __future__ import annotations

import os
from typing import Any

import pytest

from docket import doctor
from docket.cli import main
from docket.doctor import Finding, check_run
from docket.sandboxes.bwrap.config import BwrapConfig


def _fail_docker() -> Finding:
    return Finding("docker engine", "fail", "no daemon", "make docker-deps", frozenset({"docker"}))


def _ok_bwrap() -> Finding:
    return Finding("bwrap", "ok", "probe passed")


def _warn_cgroup() -> Finding:
    return Finding("cgroup delegation", "warn", "none", "delegate one")


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed findings instead of the host's: bwrap ok (a cgroup warning), docker failing."""
    monkeypatch.setitem(doctor.SANDBOX_CHECKS, "bwrap", (_ok_bwrap, _warn_cgroup))
    monkeypatch.setitem(doctor.SANDBOX_CHECKS, "docker", (_fail_docker,))
    monkeypatch.setitem(doctor.SANDBOX_CHECKS, "k8s", ())
    monkeypatch.setattr(doctor, "OFFLINE_MODELS", ())


def test_line_carries_the_fix_only_when_not_ok() -> None:
    assert _fail_docker().line() == "fail docker engine: no daemon; fix: make docker-deps"
    assert _ok_bwrap().line() == "ok   bwrap: probe passed"
    assert _warn_cgroup().line() == "warn cgroup delegation: none; fix: delegate one"


@pytest.mark.usefixtures("planted")
def test_check_run_lists_only_what_blocks_the_chosen_sandbox() -> None:
    assert check_run("bwrap", []) == []  # a warning does not stop a run
    assert check_run("docker", []) == ["fail docker engine: no daemon; fix: make docker-deps"]
    with pytest.raises(ValueError, match="unknown sandbox 'lxc'"):
        check_run("lxc", [])


@pytest.mark.usefixtures("planted")
def test_cli_exit_code_follows_the_chosen_sandbox(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--sandbox", "bwrap"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "ok   bwrap: probe passed",
        "warn cgroup delegation: none; fix: delegate one",
        "fail docker engine: no daemon; fix: make docker-deps",
        "ready (sandbox bwrap): every task can run on bwrap; the fail lines block only other "
        "choices: -T sandbox=docker (docker engine)",
    ]
    assert main(["doctor", "--sandbox", "docker"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "cannot run (sandbox docker): docker engine failed, so the 3 tasks that run in a sandbox "
        "(smoke, anchor_direct, anchor_audit) cannot run on docker; tasks without a sandbox can"
    )


@pytest.mark.usefixtures("planted")
def test_the_last_line_names_what_a_failed_model_check_blocks(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["doctor", "--model", "openai/gpt-4o"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "cannot run (sandbox bwrap, openai/gpt-4o): openai/gpt-4o failed, so no task can run on "
        "openai/gpt-4o; the fail lines block only other choices: -T sandbox=docker (docker engine)"
    )
    monkeypatch.setitem(doctor.SANDBOX_CHECKS, "docker", ())  # nothing fails: only "ready"
    assert main(["doctor"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ready (sandbox bwrap)"


@pytest.mark.usefixtures("planted")
def test_a_model_without_its_key_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert check_run("bwrap", ["openai/gpt-4o", "docket/scripted"]) == [
        "fail openai/gpt-4o: $OPENAI_API_KEY is not set; fix: export OPENAI_API_KEY=..."
    ]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert check_run("bwrap", ["openai/gpt-4o"]) == []
    assert check_run("bwrap", ["docket/local//nonexistent/ckpt"]) == [
        "fail docket/local//nonexistent/ckpt: /nonexistent/ckpt does not exist; "
        "fix: give a local checkpoint path"
    ]


def test_a_check_that_raises_is_one_fail_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def check_broken() -> Finding:
        raise OSError("no /proc")

    monkeypatch.setitem(doctor.SANDBOX_CHECKS, "bwrap", (check_broken,))
    assert check_run("bwrap", []) == [
        "fail broken: the check raised OSError: no /proc; fix: report this"
    ]


class _Client:
    def __init__(self, version: str | Exception) -> None:
        self._version = version

    def version(self) -> dict[str, Any]:
        if isinstance(self._version, Exception):
            raise self._version
        return {"Version": self._version}


@pytest.mark.parametrize(
    ("version", "level", "detail"),
    [
        (
            "20.10.24+dfsg1",
            "fail",
            "Engine 20.10.24+dfsg1 is older than Inspect's minimum 24.0.6",
        ),
        ("24.0.6", "ok", "Engine 24.0.6 >= 24.0.6"),
        ("28.2.2", "ok", "Engine 28.2.2 >= 24.0.6"),
        (ConnectionError("refused"), "fail", "no daemon answers (refused)"),
    ],
)
def test_engine_against_inspects_minimum(
    monkeypatch: pytest.MonkeyPatch, version: str | Exception, level: str, detail: str
) -> None:
    pytest.importorskip("docker", reason="the docker SDK (docket[docker]) is not installed")
    monkeypatch.setattr(doctor, "_docker_client", lambda: _Client(version))
    found = doctor.check_docker_engine()
    assert (found.level, found.detail) == (level, detail)


@pytest.mark.skipif(os.geteuid() != 0, reason="uid leases need root")
def test_spare_uids_counts_a_lease_as_taken() -> None:
    from docket.sandboxes.bwrap.uids import lease_uid

    first, last = BwrapConfig().host_uid_range
    before = doctor.spare_uids(first, last)
    lease = lease_uid(BwrapConfig())
    try:
        assert doctor.spare_uids(first, last) == before - 1
    finally:
        lease.release()
    assert doctor.spare_uids(first, last) == before
