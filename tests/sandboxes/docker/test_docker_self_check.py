"""Inspect's portable sandbox conformance suite, run against Inspect's docker sandbox with
docket's default image (one container for the module; Inspect's Engine check lowered in the
`docker_engine` fixture only, see docker_support)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
from inspect_ai.util import SandboxEnvironment
from inspect_ai.util._sandbox.self_check import *  # noqa: F403

from tests.sandboxes.docker.container_support import start_container, stop_container

pytestmark = pytest.mark.docker

#: Checks docket's default image fails on Inspect's docker sandbox, with the reason.
KNOWN_FAILURES: dict[str, str] = {
    "test_exec_as_user": (
        "the root filesystem is read-only and root holds no capability, so adduser cannot add "
        "a user (exec as the image's own users, root included, works)"
    ),
}

_TASK = "docket-docker-self-check"


@pytest.fixture(scope="module")
def _container(module_docker_engine: str) -> Iterator[dict[str, SandboxEnvironment]]:
    envs: dict[str, SandboxEnvironment] = {}

    async def start() -> None:
        envs.update(await start_container(_TASK))

    try:
        anyio.run(start)
        yield envs
    finally:
        if envs:
            anyio.run(stop_container, _TASK, envs)


@pytest.fixture
async def sandbox_env(
    request: pytest.FixtureRequest, _container: dict[str, SandboxEnvironment]
) -> AsyncIterator[SandboxEnvironment]:
    reason = KNOWN_FAILURES.get(request.node.originalname)
    if reason is not None:
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    yield _container["default"]
