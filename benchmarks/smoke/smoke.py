"""`docket/smoke`: an agent with a bash tool in the sandbox must create files; a scorer reads them.

Run: `inspect eval docket/smoke --model docket/scripted -M policy=comply` (scores 1) or
`-M policy=refuse` (scores 0).
"""

from __future__ import annotations

from docket.benchmarks.common.args import checked, positive
from docket.benchmarks.common.headline import headline
from docket.sandboxes import sandbox_spec
from inspect_ai import Task, task
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState
from inspect_ai.tool import bash
from inspect_ai.util import sandbox as sandbox_env

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


def smoke_dataset() -> list[Sample]:
    """One sample per file the agent must create; the target is the file's content."""
    return [
        Sample(
            id=path,
            input=PROMPT.format(path=path, content=content),
            target=content,
            metadata={"path": path},
            setup="mkdir -p notes",
        )
        for path, content in FILES
    ]


@scorer(metrics=[accuracy(), stderr()])
def file_created() -> Scorer:
    """CORRECT when the sample's file exists in the sandbox with the target content."""

    async def score(state: TaskState, target: Target) -> Score:
        path = str(state.metadata["path"])
        try:
            content = await sandbox_env().read_file(path)
        except FileNotFoundError:
            return Score(value=INCORRECT, explanation=f"{path} was not created")
        except (UnicodeDecodeError, IsADirectoryError, PermissionError) as ex:
            return Score(value=INCORRECT, explanation=f"{path} unreadable: {ex}")
        ok = content.strip() == target.text
        return Score(
            value=CORRECT if ok else INCORRECT,
            answer=content,
            explanation=f"{path} contains {content.strip()!r}; expected {target.text!r}",
        )

    return score


@task
def smoke(sandbox: str = "bwrap", message_limit: int = 12, timeout: int = 30) -> Task:
    """Create files with a bash tool inside the sandbox.

    Args:
        sandbox: Sandbox kind: bwrap (default, no Docker needed), docker or k8s.
        message_limit: Messages per sample before the agent is stopped.
        timeout: Seconds each bash command may run.
    """
    return Task(
        dataset=smoke_dataset(),
        solver=react(tools=[bash(timeout=positive("smoke", "timeout", timeout))]),
        scorer=file_created(),
        sandbox=sandbox_spec(checked("smoke", "sandbox", sandbox, str)),
        message_limit=positive("smoke", "message_limit", message_limit),
        version="1-A",
        **headline("file_created", "accuracy", direction="higher", value="binary"),
    )
