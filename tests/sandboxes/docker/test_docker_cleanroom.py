"""The clean room on Inspect's docker sandbox: the attacks of `test_cleanroom`, same verdicts.

Without it (`naive`) every attack passes the hidden check that must fail; with it
(`scoring_sandbox`: the container restarts, so every process of the agent's ends, then clean
execs), only the honest agent passes.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from inspect_ai.util import SandboxEnvironment

from docket.sandboxes import clean_room
from tests.sandboxes.cleanroom_checks import PLANT_ENVIRONMENT, trusted_writable
from tests.sandboxes.cleanroom_probe import CLEAN, NAIVE, run_probe
from tests.sandboxes.docker.container_support import docker_container

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_without_the_clean_room_every_attack_passes(docker_engine: str, tmp_path: Path) -> None:
    assert run_probe("naive", "docker", tmp_path) == NAIVE


def test_in_the_clean_room_only_the_honest_agent_passes(docker_engine: str, tmp_path: Path) -> None:
    assert run_probe("clean", "docker", tmp_path) == CLEAN


#: A process that outlives `docker exec` (new session, double fork), renamed `tail` like the
#: container's own, writing a heartbeat.
_DAEMON = (
    'setsid python3 -c "import ctypes, os, time\n'
    "if os.fork(): os._exit(0)\n"
    "ctypes.CDLL(None).prctl(15, b'tail', 0, 0, 0)\n"
    "while True:\n"
    "    open('/workspace/beat', 'a').write('x')\n"
    '    time.sleep(0.05)\n" >/dev/null 2>&1 </dev/null &'
)


async def _beating(sb: SandboxEnvironment) -> bool:
    """Whether the heartbeat file grows within half a second."""
    before = await sb.read_file("/workspace/beat")
    await anyio.sleep(0.5)
    return await sb.read_file("/workspace/beat") != before


async def _start_daemon(sb: SandboxEnvironment) -> None:
    assert (await sb.exec(["bash", "-c", _DAEMON])).success
    while not (await sb.exec(["test", "-s", "/workspace/beat"])).success:
        await anyio.sleep(0.1)
    assert await _beating(sb)


async def test_docker_clean_room_ends_outliving_processes(docker_engine: str) -> None:
    """Nothing trusted is writable; a renamed double-forked daemon is ended (the live opt-in
    keeps it); one a clean exec leaves behind is ended before the next; planted environment
    never reaches a clean exec."""
    async with docker_container("docket-cleanroom") as sb:
        assert await trusted_writable(sb) == []
        assert (await sb.exec(["bash", "-c", PLANT_ENVIRONMENT])).success
        await _start_daemon(sb)
        await clean_room(sb, live=True)
        assert await _beating(sb)  # the explicit opt-in: the agent's processes live on
        room = await clean_room(sb)
        assert not await _beating(sb)
        env = await room.exec(["env", "-0"])
        assert dict(line.split("=", 1) for line in env.stdout.split("\0") if line) == room.env
        ps = await room.exec(["ps", "-eo", "comm="])
        assert sorted(ps.stdout.split()) == ["docker-init", "ps", "tail"]
        assert (await room.bash(_DAEMON)).success  # a scorer ran the agent's code
        while not await _beating(sb):
            await anyio.sleep(0.1)
        await room.exec(["true"])
        assert not await _beating(sb)
