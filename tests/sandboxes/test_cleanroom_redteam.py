"""A hostile agent with a shell against the clean room on bwrap, round two (issue 52, item 2).

New attempts beyond `test_cleanroom_hostile`, each asserting the safe outcome beside an honest
control: the hidden check (`answer.txt` must hold 42, which no attacker writes) still fails.

- A bytecode cache planted for a module the scorer writes later (an unchecked-hash `.pyc`
  in `/workspace/__pycache__`): python would run the agent's code in place of the scorer's
  source. Held by `PYTHONPYCACHEPREFIX=/dev/null` in every clean exec (no cache is read).
- A symlink through `/proc` (`/proc/self/fd/3`, `/dev/fd/3`, `/dev/stdin`, relative, through
  a directory link, in a read-only directory, with a newline in its name) where the check
  reads the agent's answer: a check that holds its expected file open (`cmp`, python's
  `with open(a), open(b)`) would compare that file with itself. Held by the room's sweep,
  which removes every link that resolves through /proc before the room is made.
- Taking the write bit off `/tmp` (the agent owns it) so the room cannot be made: an error
  the agent could raise at will. Held: the room gives the bit back first.
- A workspace of mode 0: the scorer's file operations (which ran in the workspace) raised, a
  sample error at will. Held: they start at `/`; a check run in `/workspace` fails (0.0).
"""

from __future__ import annotations

import pytest
from inspect_ai.util import SandboxEnvironment

from docket.agents.cli_target import read_workspace
from docket.agents.cli_target.workspace import WorkspaceError
from docket.sandboxes import clean_room
from docket.sandboxes import cleanroom as cleanroom_module
from docket.sandboxes.cleanroom import ScoringSandbox
from tests.sandboxes.bwrap_support import bwrap_sandbox, requires_bwrap

pytestmark = requires_bwrap

#: The scorer's hidden test, written into the agent's workspace and run by `unittest`.
HIDDEN_TEST = (
    "import unittest\n"
    "class T(unittest.TestCase):\n"
    "    def test_answer(self):\n"
    "        with open('/workspace/answer.txt') as f:\n"
    "            self.assertEqual(f.read().strip(), '42')\n"
)
#: Run by the agent: an unchecked-hash bytecode cache for `test_hidden`, whose test passes.
PLANT_PYC = """
import importlib.util, marshal, os, sys
os.makedirs("/workspace/__pycache__", exist_ok=True)
src = "import unittest\\nclass T(unittest.TestCase):\\n    def test_answer(self): pass\\n"
code = compile(src, "/workspace/test_hidden.py", "exec")
head = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + bytes(8)
name = f"/workspace/__pycache__/test_hidden.{sys.implementation.cache_tag}.pyc"
open(name, "wb").write(head + marshal.dumps(code))
"""
#: The scorer's unittest run of the hidden test it wrote into the workspace.
RUN_HIDDEN = ["python3", "-m", "unittest", "discover", "-s", "/workspace", "-p", "test_hidden.py"]


async def _hidden_test_passes(sb: SandboxEnvironment, plant: str | None, honest: bool) -> bool:
    if plant is not None:
        assert (await sb.exec(["python3", "-c", plant])).success
    if honest:
        await sb.write_file("/workspace/answer.txt", "42\n")
    room = await clean_room(sb)
    await sb.write_file("/workspace/test_hidden.py", HIDDEN_TEST)  # the scorer's own source
    return (await room.exec(RUN_HIDDEN, cwd="/workspace", timeout=60)).success


async def test_a_planted_bytecode_cache_does_not_replace_the_scorers_module() -> None:
    async with bwrap_sandbox() as sb:
        assert not await _hidden_test_passes(sb, PLANT_PYC, honest=False)
    async with bwrap_sandbox() as sb:  # honest control
        assert await _hidden_test_passes(sb, None, honest=True)
    async with bwrap_sandbox() as sb:  # the cache does not break an honest answer either
        assert await _hidden_test_passes(sb, PLANT_PYC, honest=True)


#: Links the agent leaves where the check reads its answer, each resolving through /proc.
PROC_LINKS = {
    "fd": "ln -s /proc/self/fd/3 /workspace/answer.txt",
    "dev-fd": "ln -s /dev/fd/3 /workspace/answer.txt",
    "relative": "cd /workspace && ln -s ../proc/self/fd/3 answer.txt",
    "dir-link": "cd /workspace && ln -s / root && ln -s root/proc/thread-self/fd/3 answer.txt",
    "chain": "cd /workspace && ln -s /dev/fd f && ln -s f/3 a && ln -s a answer.txt",
    "read-only-dir": (
        "mkdir /workspace/ro && ln -s /proc/self/fd/3 /workspace/ro/x && chmod 555 /workspace/ro "
        "&& ln -s ro/x /workspace/answer.txt"
    ),
    "newline": "cd /workspace && ln -s /proc/self/fd/3 \"$(printf 'n\\n')\" && "
    "ln -s \"$(printf 'n\\n')\" answer.txt",
    "stdin": "ln -s /dev/stdin /workspace/answer.txt",
}
#: Checks that compare the agent's answer with an expected file in the room (cwd: the room).
COMPARE = {
    "cmp": ["cmp", "expected.txt", "/workspace/answer.txt"],
    "python": [
        "python3",
        "-c",
        "import sys\n"
        "with open('expected.txt') as e, open('/workspace/answer.txt') as a:\n"
        "    sys.exit(e.read() != a.read())",
    ],
}


async def _compare(room: ScoringSandbox, check: str) -> bool:
    """Whether `check` says the answer matches (stdin: the expected text again, as a scorer
    might feed it)."""
    return (await room.exec(COMPARE[check], input="42\n", timeout=30)).success


@pytest.mark.parametrize("link", sorted(PROC_LINKS))
async def test_a_link_through_proc_does_not_compare_the_expected_file_with_itself(
    link: str,
) -> None:
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", PROC_LINKS[link]])).success
        room = await clean_room(sb)
        await room.write_file("expected.txt", "42\n")
        assert [await _compare(room, check) for check in sorted(COMPARE)] == [False, False]
        gone = await sb.exec(["test", "-L", "/workspace/answer.txt"])
        dangling = await sb.exec(["test", "-e", "/workspace/answer.txt"])
        assert gone.success or not dangling.success  # removed, or left pointing at nothing


async def test_honest_answers_and_ordinary_links_are_left_alone() -> None:
    plant = (
        "cd /workspace && echo 42 > real.txt && ln -s real.txt answer.txt && "
        "ln -s /usr/bin/python3 py && ln -s /nowhere dangling && ln -s loop loop"
    )
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", plant])).success
        room = await clean_room(sb)
        await room.write_file("expected.txt", "42\n")
        assert [await _compare(room, check) for check in sorted(COMPARE)] == [True, True]
        links = await sb.exec(["bash", "-c", "cd /workspace && ls -A | sort"])
        assert links.stdout.split() == ["answer.txt", "dangling", "loop", "py", "real.txt"]


async def test_taking_the_write_bit_off_tmp_cannot_stop_the_room() -> None:
    """The agent owns `/tmp` on bwrap: `chmod 0` on it would fail the room's mkdir, a sample
    error the agent could raise at will instead of its 0.0. The room gives the bit back."""
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", "chmod 0 /tmp"])).success
        room = await clean_room(sb)
        await room.write_file("expected.txt", "42\n")
        assert not await _compare(room, "cmp")


async def test_a_workspace_of_mode_zero_fails_the_check_and_not_the_scorer() -> None:
    """`chmod 0 /workspace` made every `read_file`/`write_file` fail (they ran in the
    workspace), so a scorer writing its check into the room raised: a sample error the agent
    could cause at will. File operations now start at `/`; the check itself fails (0.0)."""
    check = "import unittest\nunittest.main(module='test_hidden')\n"
    async with bwrap_sandbox() as sb:
        plant = "echo 42 > /workspace/answer.txt; chmod 0 /workspace"
        assert (await sb.exec(["bash", "-c", plant])).success
        room = await clean_room(sb)
        await room.write_file("test_hidden.py", HIDDEN_TEST)
        assert await room.read_file(room.path("test_hidden.py")) == HIDDEN_TEST
        result = await room.exec(
            ["python3", "-c", check], cwd="/workspace", env={"PYTHONPATH": room.root}, timeout=30
        )
        assert not result.success
        with pytest.raises(PermissionError):
            await room.read_file("/workspace/answer.txt")


async def test_a_link_in_a_directory_the_agent_made_unlistable_is_found() -> None:
    """A directory of mode 0111 cannot be listed, yet a check can open a known path in it:
    the sweep lists it with its owner's read bit for a moment, then gives its mode back."""
    plant = (
        "mkdir /workspace/out && ln -s /proc/self/fd/3 /workspace/out/answer.txt && "
        "chmod 111 /workspace/out"
    )
    check = ["cmp", "expected.txt", "/workspace/out/answer.txt"]
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", plant])).success
        room = await clean_room(sb)
        await room.write_file("expected.txt", "42\n")
        assert not (await room.exec(check, timeout=30)).success
        mode = await sb.exec(["stat", "-c", "%a", "/workspace/out"])
        assert mode.stdout.strip() == "111"


@pytest.mark.parametrize("link", sorted(PROC_LINKS))
async def test_the_shell_sweep_for_images_without_python_removes_the_same_links(
    link: str,
) -> None:
    """Where an image has no `/usr/bin/python3` the room sweeps with `find` and `readlink`."""
    sweep = (
        'find /workspace -type l -exec /bin/sh -c "$SWEEP" sh {} + 3>&2; '
        "test -e /workspace/answer.txt && echo kept || echo gone"
    )
    async with bwrap_sandbox() as sb:
        assert (await sb.exec(["bash", "-c", PROC_LINKS[link]])).success
        result = await sb.exec(["sh", "-c", sweep], env={"SWEEP": cleanroom_module._UNLINK_PROC})
        assert result.stdout.split() == ["gone"], result.stderr


async def test_a_workspace_past_the_output_limit_is_a_workspace_error_not_a_crash() -> None:
    """12 MB of random bytes in the workspace: the anchor scorer's `read_workspace` (a tar of
    it on stdout) passes Inspect's output limit. That raised `OutputLimitExceededError`, which
    the scorer does not catch (a sample error the agent could cause at will); it is now a
    `WorkspaceError`, which the scorer reports as an unreadable workspace."""
    async with bwrap_sandbox() as sb:
        plant = "head -c 12M /dev/urandom > /workspace/noise"
        assert (await sb.exec(["bash", "-c", plant])).success
        with pytest.raises(WorkspaceError, match="output limit"):
            await read_workspace(await clean_room(sb))


#: Run by the agent: plant python's `sitecustomize` where Debian's python3 looks for it (its
#: `/usr/lib/python3.11/sitecustomize.py` is a link to `/etc/python3.11/`, which bwrap's /etc
#: lacks), as a `usercustomize` and a `.pth` in every system site directory; print what took.
PLANT_SITECUSTOMIZE = """
import os, site, sys
paths = ["/etc/python3.11/sitecustomize.py", "/etc/python3/sitecustomize.py"]
paths += [os.path.join(d, "zz.pth") for d in site.getsitepackages()]
paths += [os.path.join(d, "usercustomize.py") for d in sys.path if d]
took = []
for path in paths:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("import os; os._exit(0)\\n")
        took.append(path)
    except OSError:
        pass
print(took)
"""


async def test_python_startup_files_cannot_be_planted() -> None:
    """The dangling `sitecustomize.py` link into `/etc` (bwrap copies only a few /etc files)
    cannot be filled in: /etc is read-only; nor can a `.pth` or `usercustomize` be placed."""
    async with bwrap_sandbox() as sb:
        planted = await sb.exec(["python3", "-c", PLANT_SITECUSTOMIZE])
        assert planted.stdout.strip() == "[]"
        room = await clean_room(sb)
        assert not (await room.exec(["python3", "-c", "import sys; sys.exit(1)"])).success


async def test_a_link_through_proc_made_by_the_agents_code_the_scorer_runs_is_swept() -> None:
    """The scorer runs the agent's build (its own code, on purpose), then compares what it
    made with the expected file: the build leaves a link through /proc; the room sweeps
    again before its next command."""
    build = "ln -s /proc/self/fd/3 /workspace/answer.txt\n"
    async with bwrap_sandbox() as sb:
        await sb.write_file("/workspace/build.sh", build)
        room = await clean_room(sb)
        await room.write_file("expected.txt", "42\n")
        assert (await room.exec(["bash", "/workspace/build.sh"], timeout=30)).success
        assert not await _compare(room, "cmp")
    async with bwrap_sandbox() as sb:  # honest control
        await sb.write_file("/workspace/build.sh", "echo 42 > /workspace/answer.txt\n")
        room = await clean_room(sb)
        await room.write_file("expected.txt", "42\n")
        assert (await room.exec(["bash", "/workspace/build.sh"], timeout=30)).success
        assert await _compare(room, "cmp")


async def test_a_disk_left_just_full_enough_for_the_room_fails_in_one_line() -> None:
    """The agent leaves free exactly the inodes the room takes (3): the room is made, the
    scorer's first file is refused (ENOSPC), in one line: an error, never a pass. (Left open:
    the agent can turn its sample into an error this way; see the README.)"""
    fill = "cd /workspace && i=0; while : > f$i 2>/dev/null; do i=$((i+1)); done; rm f0 f1 f2"
    async with bwrap_sandbox({"max_disk_mb": 8, "max_inodes": 200}) as sb:
        assert (await sb.exec(["bash", "-c", fill], timeout=60)).success
        room = await clean_room(sb)
        with pytest.raises(OSError) as caught:
            await room.write_file("check.py", "import sys; sys.exit(0)\n")
        assert "\n" not in str(caught.value)
