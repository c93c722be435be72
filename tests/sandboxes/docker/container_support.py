"""One sample's container on Inspect's docker sandbox with docket's default image."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from inspect_ai.util import SandboxEnvironment
from inspect_ai.util._sandbox.docker.docker import DockerSandboxEnvironment

from docket.sandboxes import image_config


async def start_container(task: str) -> dict[str, SandboxEnvironment]:
    """`task_init` and `sample_init` of the default image's compose project for `task`."""
    config = image_config()
    await DockerSandboxEnvironment.task_init(task, config)
    return await DockerSandboxEnvironment.sample_init(task, config, {})


async def stop_container(task: str, envs: dict[str, SandboxEnvironment]) -> None:
    """`sample_cleanup` and `task_cleanup` of what `start_container` started."""
    config = image_config()
    try:
        await DockerSandboxEnvironment.sample_cleanup(task, config, envs, False)
    finally:
        await DockerSandboxEnvironment.task_cleanup(task, config, False)


@asynccontextmanager
async def docker_container(task: str) -> AsyncIterator[SandboxEnvironment]:
    """One sample's container, removed on exit."""
    envs = await start_container(task)
    try:
        yield envs["default"]
    finally:
        await stop_container(task, envs)
