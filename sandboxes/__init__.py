"""docket.sandboxes: the `bwrap` sandbox provider, the images shared with docker/k8s, and the
clean room scorers run their commands in (`scoring_sandbox`)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.util import SandboxEnvironmentSpec

from docket.core.inspect_private import PrerequisiteError

from .cleanroom import (
    CLEAN_PATH,
    CleanRoomError,
    RoomUnavailable,
    ScoringSandbox,
    clean_room,
    end_agent_processes,
    scoring_sandbox,
)

#: Sandbox kinds `sandbox_spec` accepts.
SANDBOX_KINDS = ("bwrap", "docker", "k8s")

_IMAGES = Path(__file__).parent / "images"


class SandboxSpecError(PrerequisiteError, ValueError):
    """An unknown sandbox kind or image: Inspect prints the message as one line."""


def image_config(name: str = "default") -> str:
    """Path of the compose.yaml for image `name` (usable by the docker and k8s sandboxes)."""
    path = _IMAGES / name / "compose.yaml"
    if not path.is_file():
        known = sorted(p.name for p in _IMAGES.iterdir() if (p / "compose.yaml").is_file())
        raise SandboxSpecError(f"unknown sandbox image {name!r}; available: {', '.join(known)}")
    return str(path)


def k8s_values(name: str = "default") -> str:
    """Path of the inspect-k8s-sandbox values file for image `name`.

    Args:
        name: The image folder under `sandboxes/images/`.

    Returns:
        The `k8s-values.yaml` path (the k8s sandbox refuses the compose file's `pids_limit`).

    Raises:
        SandboxSpecError: The image has no values file (one line).
    """
    path = _IMAGES / name / "k8s-values.yaml"
    if not path.is_file():
        known = sorted(p.name for p in _IMAGES.iterdir() if (p / "k8s-values.yaml").is_file())
        raise SandboxSpecError(
            f"sandbox image {name!r} has no k8s values; available: {', '.join(known)}"
        )
    return str(path)


def sandbox_spec(kind: str, name: str = "default") -> SandboxEnvironmentSpec:
    """Sandbox spec for `kind` ("bwrap", "docker" or "k8s"); docker/k8s use image `name`.

    Any other kind is a `SandboxSpecError` (a `PrerequisiteError`): Inspect prints one line.
    """
    if kind == "bwrap":
        return SandboxEnvironmentSpec("bwrap")
    if kind == "docker":
        return SandboxEnvironmentSpec(kind, image_config(name))
    if kind == "k8s":
        return SandboxEnvironmentSpec(kind, k8s_values(name))
    raise SandboxSpecError(
        f"-T sandbox={kind!r} is not a sandbox kind; accepted: {', '.join(SANDBOX_KINDS)}"
    )


__all__ = [
    "CLEAN_PATH",
    "SANDBOX_KINDS",
    "CleanRoomError",
    "RoomUnavailable",
    "SandboxSpecError",
    "ScoringSandbox",
    "clean_room",
    "end_agent_processes",
    "image_config",
    "k8s_values",
    "sandbox_spec",
    "scoring_sandbox",
]
