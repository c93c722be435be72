"""`docket/smoke`: an agent with tools in the sandbox must create files; a scorer reads them.

`-T tools=bash` (default): one `bash` tool; `--model docket/scripted -M policy=comply` scores 1,
`-M policy=refuse` 0. `-T tools=stateful`: Inspect's `bash_session()` and `text_editor()`,
which keep a shell's cwd and environment across calls and edit files in place;
`-M policy=stateful` scores 1, comply and refuse 0.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState
from inspect_ai.tool import Tool, bash, bash_session, text_editor
from inspect_ai.util import OutputLimitExceededError

from docket.core.headline import headline
from docket.core.options import checked, one_of, positive
from docket.sandboxes import RoomUnavailable, ScoringSandbox, sandbox_spec, scoring_sandbox

PROMPT = (
    "In the current directory, create a file named `{path}` containing exactly: '{content}'. "
    "You can run this shell command to do it:\n```bash\nprintf '%s\\n' '{content}' > {path}\n```\n"
    "Then submit the word 'done'."
)

FILES: list[tuple[str, str]] = [
    ("hello.txt", "docket ready"),
    ("notes/plan.md", "step one"),
    ("answer.txt", "42"),
]


#: Steps for `tools=stateful` (the `stateful` scripted policy reads the ```steps block). The
#: greeting reaches proj/greeting.txt only if the second call kept the first one's cwd and
#: environment; notes.md ends as 'final draft' only if str_replace edited it in place.
STATEFUL_PROMPT = """Use the bash_session and text_editor tools for these steps, in order:
```steps
bash_session: mkdir -p proj && cd proj && export GREETING='{greeting}'
bash_session: printf '%s\\n' "$GREETING" > greeting.txt && pwd
text_editor create /workspace/proj/notes.md: first draft\\n
text_editor str_replace /workspace/proj/notes.md: first => final
text_editor view /workspace/proj/notes.md
```
Then reply with 'done'."""

STATEFUL: list[tuple[str, str]] = [("session", "hello from one shell"), ("second", "still here")]


def smoke_dataset(tools: str = "bash") -> list[Sample]:
    """One sample per file set the agent must create; `expect` maps paths to contents."""
    if tools == "stateful":
        return [
            Sample(
                id=name,
                input=STATEFUL_PROMPT.format(greeting=greeting),
                target=greeting,
                metadata={
                    "expect": {"proj/greeting.txt": greeting, "proj/notes.md": "final draft"}
                },
            )
            for name, greeting in STATEFUL
        ]
    return [
        Sample(
            id=path,
            input=PROMPT.format(path=path, content=content),
            target=content,
            metadata={"expect": {path: content}},
            setup="mkdir -p notes",
        )
        for path, content in FILES
    ]


async def _check_file(room: ScoringSandbox, path: str, expected: str) -> str | None:
    """Why the sandbox's file at `path` is not `expected` (None when it is)."""
    try:
        content = await room.read_file(path)
    except FileNotFoundError:
        return f"{path} was not created"
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as ex:
        return f"{path} unreadable: {ex}"
    except OutputLimitExceededError:
        return f"{path} is larger than the sandbox's read limit"
    if content.strip() != expected:
        return f"{path} contains {content.strip()!r}; expected {expected!r}"
    return None


@scorer(metrics=[accuracy(), stderr()])
def file_created() -> Scorer:
    """CORRECT when every file the sample expects exists in the sandbox with its content.

    The files are read in a clean room (`scoring_sandbox`): every process the agent started,
    Inspect's tool server included, has ended first, so none can change them meanwhile. A
    sandbox whose disk the agent left too full for the room is INCORRECT with that reason.

    Returns:
        A scorer with CORRECT or INCORRECT and the problems found as the explanation.
    """

    async def score(state: TaskState, target: Target) -> Score:
        expect = {str(k): str(v) for k, v in dict(state.metadata["expect"]).items()}
        try:
            room = await scoring_sandbox()
        except RoomUnavailable as ex:
            return Score(value=INCORRECT, explanation=f"no room left to score in: {ex}")
        problems = [
            p for path, text in expect.items() if (p := await _check_file(room, path, text))
        ]
        return Score(
            value=INCORRECT if problems else CORRECT,
            explanation="; ".join(problems) or f"{', '.join(expect)} as expected",
        )

    return score


def _tools(tools: str, timeout: int) -> list[Tool]:
    if tools == "stateful":
        return [bash_session(), text_editor()]
    return [bash(timeout=timeout)]


@task
def smoke(
    sandbox: str = "bwrap", tools: str = "bash", message_limit: int = 16, timeout: int = 30
) -> Task:
    """Create files with tools inside the sandbox.

    Args:
        sandbox: Sandbox kind: bwrap (default, no Docker needed), docker or k8s.
        tools: `bash` (one bash tool) or `stateful` (Inspect's bash_session and text_editor).
        message_limit: Messages per sample before the agent is stopped.
        timeout: Seconds each bash command may run (tools=bash).

    Returns:
        The task: file-creation requests solved by a `react` agent with the chosen tools, scored by
        `file_created`.
    """
    kind = one_of("smoke", "tools", tools, ("bash", "stateful"))
    return Task(
        dataset=smoke_dataset(kind),
        solver=react(tools=_tools(kind, positive("smoke", "timeout", timeout))),
        scorer=file_created(),
        sandbox=sandbox_spec(checked("smoke", "sandbox", sandbox, str)),
        message_limit=positive("smoke", "message_limit", message_limit),
        version="1-B",
        **headline("file_created", "accuracy", direction="higher", value="binary"),
    )
