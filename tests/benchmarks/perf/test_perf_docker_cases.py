"""The docker bench cases skip with one line where Docker cannot run, and are registered."""

from __future__ import annotations

import pytest

from docket.benchmarks.perf import cases, docker_cases
from docket.benchmarks.perf.harness import Skipped, run_case
from docket.sandboxes.images import docker


@pytest.mark.parametrize("name", ["sandbox_exec_docker", "sandbox_sample_docker"])
def test_skipped_with_the_reason_without_docker(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    reason = "no Docker daemon answers `docker version` (make docker-deps starts one)"
    monkeypatch.setattr(docker, "docker_problem", lambda: reason)
    assert cases.CASES[name] is docker_cases.DOCKER_CASES[name]
    assert run_case(name, cases.CASES[name], True) == Skipped(name, "docker", reason)
