"""Docker for the docker sandbox tests: why it cannot run here, and Inspect's lifted Engine check.

Every test here takes the `docker_engine` fixture. Where Docker cannot run (no CLI, no daemon,
no Compose v2, docket's default image not built: `make docker-deps`), the test is skipped with
one line naming why; with `CI=true` that line fails the test instead, so CI cannot pass with its
Docker tests skipped.

Inspect refuses Docker Engines older than 24.0.6 (`inspect_ai/util/_sandbox/docker/prereqs.py`).
Debian bookworm's docker.io, which CI installs, is 20.10.24. Only inside this fixture, and only
on such an engine, that one check is lowered to `TESTED_ENGINE_FLOOR` (the Compose check and
everything else of Inspect's stay); users keep Inspect's check and need Engine >= 24.0.6.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pytest
import semver
from inspect_ai.util._sandbox.docker import prereqs

from docket.sandboxes.images.docker import docker_problem, engine_version

#: The oldest Engine these tests have run on (Debian bookworm's docker.io 20.10.24).
TESTED_ENGINE_FLOOR = "20.10.0"


def engine_below_inspect_minimum(version: str) -> bool:
    """Whether Inspect's own Engine check would refuse `version`."""
    parsed = semver.Version.parse(version.split("+")[0])
    return parsed.compare(prereqs.DOCKER_ENGINE_REQUIRED_VERSION) < 0


def ready_engine(monkeypatch: pytest.MonkeyPatch) -> str:
    """Skip (or, with CI=true, fail) without Docker; else the Engine version, with Inspect's
    Engine check lowered to `TESTED_ENGINE_FLOOR` through `monkeypatch` only when the Engine is
    older than Inspect's minimum (the one lifted check, see the module docstring)."""
    problem = docker_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the docker tests: {problem}", pytrace=False)
        pytest.skip(f"docker unavailable: {problem}")
    version = engine_version()
    assert version is not None
    if engine_below_inspect_minimum(version):
        lowered = functools.partial(prereqs.validate_docker_engine, version=TESTED_ENGINE_FLOOR)
        monkeypatch.setattr(prereqs, "validate_docker_engine", lowered)
    return version


@pytest.fixture
def docker_engine(monkeypatch: pytest.MonkeyPatch) -> str:
    """`ready_engine` for one test."""
    return ready_engine(monkeypatch)


@pytest.fixture(scope="module")
def module_docker_engine() -> Iterator[str]:
    """`ready_engine` for a module's tests (the lowered check undone after the module)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield ready_engine(monkeypatch)
