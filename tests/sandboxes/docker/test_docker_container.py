"""What an agent sees inside docket's default image on Inspect's docker sandbox, asserted from
inside the container against the bwrap sandbox's defaults (`BwrapConfig()`)."""

from __future__ import annotations

import json

import pytest
from inspect_ai.util._sandbox.docker import prereqs

from docket.sandboxes.bwrap.config import BwrapConfig
from tests.sandboxes.docker import docker_support
from tests.sandboxes.docker.container_support import docker_container
from tests.sandboxes.docker.docker_support import (
    TESTED_ENGINE_FLOOR,
    engine_below_inspect_minimum,
    ready_engine,
)

pytestmark = pytest.mark.docker

#: Run inside the container: identity, cwd, its cgroup limits (v1 or v2) and the network.
PROBE = r"""
import json, os, socket
def first(*paths):
    for path in paths:
        try:
            return open(path).read().strip()
        except OSError:
            pass
    return None
out = {"uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(),
       "memory": first("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"),
       "pids": first("/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"),
       "interfaces": sorted(os.listdir("/sys/class/net"))}
try:
    socket.create_connection(("203.0.113.1", 80), timeout=3)
    out["connect"] = "connected"
except OSError as error:
    out["connect"] = error.errno
try:
    socket.getaddrinfo("deb.debian.org", 80)
    out["resolve"] = "resolved"
except OSError as error:
    out["resolve"] = type(error).__name__
print(json.dumps(out))
"""


def test_lifted_check_is_only_for_old_engines() -> None:
    assert engine_below_inspect_minimum("20.10.24+dfsg1")
    assert not engine_below_inspect_minimum(prereqs.DOCKER_ENGINE_REQUIRED_VERSION)
    assert not engine_below_inspect_minimum("28.2.2")
    assert engine_below_inspect_minimum(TESTED_ENGINE_FLOOR)


def test_without_docker_a_skip_here_is_a_failure_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = "no Docker daemon answers `docker version` (make docker-deps starts one)"
    monkeypatch.setattr(docker_support, "docker_problem", lambda: reason)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="^docker unavailable: no Docker daemon"):
        ready_engine(monkeypatch)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="^CI must run the docker tests: no Docker"):
        ready_engine(monkeypatch)


async def test_container_matches_bwrap_defaults(docker_engine: str) -> None:
    defaults = BwrapConfig()
    assert defaults.memory_mb is not None and defaults.max_processes is not None
    async with docker_container("docket-docker-inside") as env:
        result = await env.exec(["python3", "-c", PROBE])
        assert result.success, result.stderr
        seen = json.loads(result.stdout)
        whoami = await env.exec(["whoami"])
    assert (seen["uid"], seen["gid"], seen["cwd"]) == (1000, 1000, "/workspace")
    assert whoami.stdout.strip() == "agent"
    assert int(seen["memory"]) == defaults.memory_mb * 2**20
    assert int(seen["pids"]) == defaults.max_processes
    assert seen["interfaces"] == ["lo"]
    assert seen["connect"] == 101  # ENETUNREACH: no route off loopback
    assert seen["resolve"] == "gaierror"


#: Run inside the container: its rlimits, capabilities, and which paths take writes (and how big).
HARDENING = r"""
import json, os, resource
limits = {name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))
          for name in ("NOFILE", "MEMLOCK", "FSIZE", "CORE", "RTPRIO", "NICE")}
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines()
              if ":\t" in line)
writable = {}
for path in ("/", "/etc", "/usr", "/workspace", "/tmp", "/var/tmp", "/home/agent", "/dev/shm"):
    try:
        with open(os.path.join(path, ".probe"), "w") as out:
            out.write("x")
        os.unlink(os.path.join(path, ".probe"))
        stat = os.statvfs(path)
        writable[path] = stat.f_blocks * stat.f_frsize >> 20
    except OSError as error:
        writable[path] = os.strerror(error.errno)
print(json.dumps({"limits": limits, "cap_eff": status["CapEff"].strip(),
                  "no_new_privs": status["NoNewPrivs"].strip(), "writable": writable}))
"""


async def test_container_is_hardened_like_bwrap(docker_engine: str) -> None:
    defaults = BwrapConfig()
    assert defaults.max_file_size_mb is not None
    async with docker_container("docket-docker-hardened") as env:
        result = await env.exec(["python3", "-c", HARDENING])
        assert result.success, result.stderr
        seen = json.loads(result.stdout)
        as_root = await env.exec(["sh", "-c", "grep CapEff /proc/self/status"], user="root")
        for path in ("answer.txt", "/tmp/answer.txt", "/home/agent/answer.txt"):
            await env.write_file(path, "42\n")
            assert await env.read_file(path) == "42\n"
    assert seen["limits"] == {
        "NOFILE": [defaults.max_open_files] * 2,
        "MEMLOCK": [defaults.max_locked_memory_kb << 10] * 2,
        "FSIZE": [defaults.max_file_size_mb << 20] * 2,
        "CORE": [1, 1],
        "RTPRIO": [0, 0],
        "NICE": [0, 0],
    }
    assert (seen["cap_eff"], seen["no_new_privs"]) == ("0000000000000000", "1")
    assert as_root.stdout.split() == ["CapEff:", "0000000000000000"]  # root, but no capability
    read_only = "Read-only file system"
    written = seen["writable"]
    assert (written["/"], written["/etc"], written["/usr"]) == (read_only,) * 3
    assert (written["/var/tmp"], written["/dev/shm"]) == (256, 64)  # sized tmpfs mounts
    for path in ("/workspace", "/tmp", "/home/agent"):  # volumes of the project (docker cp)
        assert isinstance(written[path], int), path
