"""bwrap against Inspect's `docker` sandbox (docket's default image), the user's real
alternative to it, in the same run.

- sandbox_exec_docker: `exec(["true"])` in a sample's bwrap sandbox vs in its docker container
  (`docker exec` through Compose);
- sandbox_sample_docker: a sample's whole sandbox, each side's own lifecycle: bwrap's
  sample_init + 10 execs + sample_cleanup vs Inspect's compose up, 10 execs, compose down.

Both skip with one line where Docker cannot run (`docket.sandboxes.images.docker`). Inspect's
`task_init` (its Engine check and `compose build`) is not run: the image is built beforehand by
`make docker-deps`, so only `sample_init` onwards is timed and no check is lifted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from docket.benchmarks.perf.harness import Measurement, PrerequisiteMissing, paired_medians

_TASK = "docket-perf-docker"


def _require_docker() -> str:
    """The default image's compose file; `PrerequisiteMissing` where Docker cannot run it."""
    from docket.sandboxes import image_config
    from docket.sandboxes.images.docker import docker_problem

    problem = docker_problem()
    if problem is not None:
        raise PrerequisiteMissing("docker", problem)
    return image_config()


def _docker_kind() -> type[Any]:
    from inspect_ai.util._sandbox.docker.docker import DockerSandboxEnvironment

    return DockerSandboxEnvironment


def sandbox_exec_docker(quick: bool) -> Measurement:
    """Latency of `exec(["true"])`: bwrap's exec service vs `docker exec` in the container."""
    from docket.benchmarks.perf.cases import _check, _require_bwrap
    from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment

    config = _require_docker()
    docker = _docker_kind()
    loop = asyncio.new_event_loop()
    try:
        _require_bwrap(loop)
        ours = loop.run_until_complete(BwrapSandboxEnvironment.sample_init("perf", None, {}))
        theirs = loop.run_until_complete(docker.sample_init(_TASK, config, {}))
        try:

            def run(environments: dict[str, Any]) -> Callable[[], object]:
                def once() -> object:
                    result = loop.run_until_complete(environments["default"].exec(["true"]))
                    _check(result)
                    return result

                return once

            run(ours)()  # warm both
            run(theirs)()
            repeats = 5 if quick else 20
            docket_s, peer_s = paired_medians(run(ours), run(theirs), repeats)
        finally:
            loop.run_until_complete(
                BwrapSandboxEnvironment.sample_cleanup("perf", None, ours, False)
            )
            loop.run_until_complete(docker.sample_cleanup(_TASK, config, theirs, False))
    finally:
        loop.close()
    return Measurement(
        "sandbox_exec_docker",
        "exec(['true'])",
        "inspect docker sandbox",
        docket_s,
        peer_s,
        target=0.5,
        repeats=repeats,
        note="one round trip to bwrap's exec service vs `docker compose exec` (a docker CLI "
        "process and the daemon's exec) per call",
    )


def sandbox_sample_docker(quick: bool) -> Measurement:
    """A whole sample's sandbox, each side's own lifecycle: bwrap vs compose up/down."""
    from docket.benchmarks.perf.cases import _check, _require_bwrap
    from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment

    config = _require_docker()
    docker = _docker_kind()

    def sample(kind: type[Any], task: str, cfg: str | None) -> Callable[[], object]:
        async def lifetime() -> None:
            envs = await kind.sample_init(task, cfg, {})
            try:
                for _ in range(10):
                    _check(await envs["default"].exec(["true"]))
            finally:
                await kind.sample_cleanup(task, cfg, envs, False)

        return lambda: loop.run_until_complete(lifetime())

    loop = asyncio.new_event_loop()
    try:
        _require_bwrap(loop)
        ours, theirs = sample(BwrapSandboxEnvironment, "perf", None), sample(docker, _TASK, config)
        ours()  # warm both (probe, first compose up)
        theirs()
        repeats = 2 if quick else 5
        docket_s, peer_s = paired_medians(ours, theirs, repeats)
    finally:
        loop.close()
    return Measurement(
        "sandbox_sample_docker",
        "sample_init + 10 x exec(['true']) + sample_cleanup",
        "inspect docker sandbox (compose up/down)",
        docket_s,
        peer_s,
        target=0.2,
        repeats=repeats,
        note="bwrap's exec service started and killed vs a container created, 10 docker "
        "execs, and the project brought down",
    )


DOCKER_CASES = {
    "sandbox_exec_docker": sandbox_exec_docker,
    "sandbox_sample_docker": sandbox_sample_docker,
}
