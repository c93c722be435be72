"""A hostile agent with a shell against the clean room on bwrap (`clean_room`), attempt by attempt.

Beyond the end-to-end attacks of `test_cleanroom`: every path a clean exec trusts is out of the
agent's reach, nothing the agent planted reaches a clean exec's environment, an exec still in
flight when scoring starts is ended, a path planted where the room is made is refused, and a
full disk makes the room fail in one line, which smoke's scorer and the workspace reader turn
into a scored failure with that reason (never a pass, never an error the agent causes at will).
"""

from __future__ import annotations

import anyio
import pytest

from docket.agents.cli_target import read_workspace
from docket.agents.cli_target.workspace import WorkspaceError
from docket.benchmarks.smoke import smoke as smoke_module
from docket.benchmarks.smoke.smoke import _check_file
from docket.sandboxes import CleanRoomError, RoomUnavailable, clean_room, end_agent_processes
from docket.sandboxes import cleanroom as cleanroom_module
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap
from tests.sandboxes.cleanroom_checks import PLANT_ENVIRONMENT, trusted_writable

pytestmark = requires_bwrap


async def test_no_trusted_path_is_writable_by_the_agent() -> None:
    async with bwrap_sandbox() as sb:
        assert await trusted_writable(sb) == []


async def test_nothing_the_agent_plants_reaches_a_clean_exec() -> None:
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", PLANT_ENVIRONMENT])).success
        room = await clean_room(sb)
        env = await room.exec(["env", "-0"])
        assert dict(line.split("=", 1) for line in env.stdout.split("\0") if line) == room.env
        shell = await room.bash('echo "[$BASH_ENV|$ENV|$PROMPT_COMMAND|$-]"; shopt login_shell')
        assert shell.stdout.splitlines() == ["[|||hBc]", "login_shell    \toff"]
        python = await room.exec(
            ["python3", "-c", "import site, sys; print(site.ENABLE_USER_SITE, sys.path[0])"],
            cwd="/workspace",
        )
        assert python.stdout.split()[0] == "False"  # no user site
        assert python.stdout.split()[1] != ""  # PYTHONSAFEPATH: not the cwd (/workspace)


async def test_an_exec_in_flight_when_scoring_starts_is_ended() -> None:
    """A long command of the agent's (say, one whose tool call timed out on the model's side)
    keeps forking and writing; ending the agent's processes ends it and all it started."""
    loop = "while :; do (sleep 30 &); echo x >> /workspace/beat; sleep 0.05; done"
    async with bwrap_sandbox() as sb:
        outcome: list[int] = []

        async def agent() -> None:
            outcome.append((await sb.exec(["bash", "-c", loop], timeout=120)).returncode)

        async with anyio.create_task_group() as group:
            group.start_soon(agent)
            while not (await sb.exec(["test", "-s", "/workspace/beat"])).success:
                await anyio.sleep(0.1)
            with anyio.fail_after(20):
                await end_agent_processes(sb)
        assert len(outcome) == 1 and outcome[0] != 0
        before = await sb.read_file("/workspace/beat")
        await anyio.sleep(0.5)
        assert await sb.read_file("/workspace/beat") == before


async def test_a_path_planted_where_the_room_is_made_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were the room's name guessed, a symlink there would redirect the scorer's writes: mkdir
    refuses any existing path, so the room fails (one line) and nothing is written through."""
    monkeypatch.setattr(cleanroom_module.secrets, "token_hex", lambda n: "guessed")
    async with bwrap_sandbox() as sb:
        plant = "ln -s /workspace/loot /tmp/docket-score-guessed"
        assert (await sb.exec(["bash", "-c", plant])).success
        with pytest.raises(CleanRoomError, match="could not make the scoring room"):
            await clean_room(sb)
        assert not (await sb.exec(["test", "-e", "/workspace/loot"])).success


async def test_a_full_disk_fails_the_room_in_one_line() -> None:
    """The agent fills the sample's tmpfs (bytes and inodes): the scorer cannot make its room,
    and says so in one line (the sample errors; it never passes)."""
    fill = (
        "head -c 64M /dev/zero > /workspace/fill; "
        "mkdir /workspace/many && cd /workspace/many && "
        "for i in $(seq 1 400); do : > $i; done; true"
    )
    async with bwrap_sandbox({"max_disk_mb": 8, "max_inodes": 300}) as sb:
        assert (await sb.exec(["bash", "-c", fill])).success
        with pytest.raises(RoomUnavailable) as caught:
            room = await clean_room(sb)
            await room.write_file("check.py", "import sys; sys.exit(0)\n")
        assert "\n" not in str(caught.value)
        assert isinstance(caught.value, CleanRoomError)


async def test_no_room_to_score_is_a_scored_failure_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Smoke's scorer and the workspace reader score a room the agent left no space for: the
    sample fails with the reason (it does not error, so it cannot drop out of the accuracy)."""
    full = RoomUnavailable("could not make the scoring room /tmp/x: No space left on device")

    async def no_room(*args: object, **kwargs: object) -> object:
        raise full

    monkeypatch.setattr(smoke_module, "scoring_sandbox", no_room)
    state = type("State", (), {"metadata": {"expect": {"hello.txt": "docket ready"}}})()
    score = await smoke_module.file_created()(state, None)  # type: ignore[arg-type]
    assert score is not None and score.value == "I"
    assert score.explanation == f"no room left to score in: {full}"
    from docket.agents.cli_target import workspace

    monkeypatch.setattr(workspace, "scoring_sandbox", no_room)
    with pytest.raises(WorkspaceError, match="^no room left to read the workspace: could not"):
        await read_workspace()


async def test_the_sweep_for_other_sandboxes_ends_detached_and_renamed_processes() -> None:
    """The k8s path (`kill -9 -1` until only pid 1 is left), run inside one exec namespace:
    a setsid'd process and a renamed one end; what is left is pid 1, the sweep and `ps`."""
    detach = (
        "setsid sleep 1000 & "
        "python3 -c \"import ctypes, time; ctypes.CDLL(None).prctl(15, b'init', 0, 0, 0); "
        'time.sleep(1000)" & '
        'sleep 0.5; exec sh -c "$SWEEP"'
    )
    done = '[ -z "$left" ] && exit 0'  # list what is alive when the sweep is done
    sweep = cleanroom_module._SWEEP.replace(done, f"{done[:-7]} ps -eo pid=,stat=,comm= && exit 0")
    assert sweep != cleanroom_module._SWEEP
    async with bwrap_sandbox() as sb:
        result = await sb.exec(["bash", "-c", detach], env={"SWEEP": sweep}, timeout=60)
        assert result.success, result.stderr
        alive = [line.split() for line in result.stdout.splitlines()]
        init = "execinit" if sb.session.native else "python3"  # the exec's own pid 1
        assert [(pid, comm) for pid, stat, comm in alive if not stat.startswith("Z")] == [
            ("1", init),
            ("2", "sh"),
            (alive[-1][0], "ps"),
        ]


async def test_smoke_scorer_on_a_fifo_and_a_huge_file_says_why() -> None:
    """Files planted where the smoke scorer reads: a FIFO (which would block a reader) and a
    sparse file past Inspect's read limit are INCORRECT with a reason, at once."""
    plant = "mkfifo /workspace/hello.txt && truncate -s 200M /workspace/answer.txt"
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", plant])).success
        room = await clean_room(sb)
        with anyio.fail_after(30):
            fifo = await _check_file(room, "hello.txt", "docket ready")
            huge = await _check_file(room, "answer.txt", "42")
        assert fifo is not None and fifo.startswith("hello.txt unreadable")
        assert huge == "answer.txt is larger than the sandbox's read limit"


async def test_workspace_names_made_to_look_like_options_are_only_files() -> None:
    """The anchor scorer's snapshot (`tar` of the workspace) meets files named like tar
    options: they are archived as files, and nothing they name runs."""
    plant = (
        "cd /workspace && echo 'touch /workspace/pwned' > x.sh && "
        "touch -- '--checkpoint=1' '--checkpoint-action=exec=sh x.sh' '-T' ' pwned'"
    )
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", plant])).success
        files = await read_workspace(await clean_room(sb))
        assert sorted(files) == [
            " pwned",
            "--checkpoint-action=exec=sh x.sh",
            "--checkpoint=1",
            "-T",
            "x.sh",
        ]
        assert not (await sb.exec(["test", "-e", "/workspace/pwned"])).success


async def test_processes_that_do_not_end_in_time_fail_the_room_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The end request is bounded: a namespace the service cannot reap (planted here as a reply
    that never comes) is one CleanRoomError line after `END_WAIT`, never a scorer that hangs."""
    from docket.sandboxes.bwrap import session as session_module

    async def never(self: object, id: int) -> dict[str, object]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with bwrap_sandbox() as sb:
        monkeypatch.setattr(session_module, "END_WAIT", 0.5)
        monkeypatch.setattr(session_module.SandboxSession, "_wait_exit", never)
        with anyio.fail_after(30), pytest.raises(CleanRoomError) as caught:
            await end_agent_processes(sb)
        assert str(caught.value) == (
            "could not end the agent's processes: the agent's processes were not all gone "
            "after 0.5 s"
        )
