"""`docket new benchmark NAME`: a new benchmark's folder, listing, README, policies and test.

The six files a benchmark needs and nothing else: `docket._registry` imports every folder of
`benchmarks/` that has a `listing.yaml`, so no file outside the new folder and its test changes.
The task is small but real (an inline dataset, an exact-match scorer, a declared headline,
version 1-A, a validated `-T` option) and its reference policies score 1.0 and 0.0, so the
generated test passes as written and the folder is ready to be rewritten piece by piece
(docs/pages/add-benchmark.md walks through it).
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

import yaml

#: A benchmark name: a lowercase Python identifier (it is the folder, the module and the task),
#: short enough that the generated code keeps to the line length.
_NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME = 30

#: The placeholder every template spells the benchmark's name with.
_PLACEHOLDER = "__NAME__"


class ScaffoldError(ValueError):
    """A name or root that cannot take a new benchmark (one line)."""


def benchmark_files(name: str) -> dict[str, str]:
    """The files of a new benchmark, by path relative to the checkout's root.

    Args:
        name: The benchmark's name (already checked by `check_name`).

    Returns:
        Path -> text: `benchmarks/<name>/{__init__.py, <name>.py, reference.py, listing.yaml,
        README.md}` and `tests/benchmarks/<name>/test_<name>.py`.
    """
    title = name.replace("_", " ").capitalize()
    files = {
        f"benchmarks/{name}/__init__.py": _INIT,
        f"benchmarks/{name}/{name}.py": _TASK,
        f"benchmarks/{name}/reference.py": _REFERENCE,
        f"benchmarks/{name}/listing.yaml": _LISTING,
        f"benchmarks/{name}/README.md": _README,
        f"tests/benchmarks/{name}/test_{name}.py": _TEST,
    }
    return {
        path: text.replace("__TITLE__", title).replace(_PLACEHOLDER, name)
        for path, text in files.items()
    }


def _taken_names(root: Path) -> set[str]:
    """The bare names of every listed task under `root` (`erm_rag` for `docket/erm_rag`)."""
    taken: set[str] = set()
    for listing in sorted((root / "benchmarks").glob("*/listing.yaml")):
        try:
            data = yaml.safe_load(listing.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise ScaffoldError(f"{listing}: unreadable listing ({error})") from error
        tasks = data.get("tasks") if isinstance(data, dict) else None
        for entry in tasks or []:
            if isinstance(entry, dict) and entry.get("name"):
                taken.add(str(entry["name"]).removeprefix("docket/"))
    return taken


def check_name(name: str, root: Path) -> None:
    """Check that `name` can be a new benchmark of the checkout at `root`.

    Args:
        name: The proposed name.
        root: The docket checkout (the folder holding `benchmarks/` and `tests/`).

    Raises:
        ScaffoldError: One line: `root` is no docket checkout, `name` is not a lowercase
            Python identifier of at most `MAX_NAME` characters (or is a keyword), or a
            benchmark folder, test folder or registered task already has that name.
    """
    if not (root / "benchmarks" / "presets").is_dir() or not (root / "tests").is_dir():
        raise ScaffoldError(f"{root}: not a docket checkout (no benchmarks/presets or tests/)")
    if not _NAME.fullmatch(name) or keyword.iskeyword(name) or len(name) > MAX_NAME:
        raise ScaffoldError(
            f"benchmark name {name!r} must be a lowercase Python identifier of at most "
            f"{MAX_NAME} characters (a letter, then letters, digits or _), e.g. my_bench"
        )
    for taken in (root / "benchmarks" / name, root / "tests" / "benchmarks" / name):
        if taken.exists():
            raise ScaffoldError(f"{name}: {taken.relative_to(root)} already exists")
    if name in _taken_names(root):
        raise ScaffoldError(f"{name}: docket/{name} is already a registered task")


def new_benchmark(name: str, root: Path) -> list[Path]:
    """Write a new benchmark's six files under `root`.

    Args:
        name: The benchmark's name: its folder, task module, task (`docket/<name>`) and test.
        root: The docket checkout to write into.

    Returns:
        The paths written, in `benchmark_files` order.

    Raises:
        ScaffoldError: The name or root is refused (`check_name`); nothing is written.
    """
    check_name(name, root)
    written: list[Path] = []
    for relative, text in benchmark_files(name).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


_INIT = '''"""docket/__NAME__: spell a word backwards (`docket new benchmark`)."""
'''

_TASK = '''"""`docket/__NAME__`: spell a word backwards, scored by exact match.

Written by `docket new benchmark`: replace the inline dataset, the prompt and the scorer with
the benchmark's own, keeping the declared headline, the version and the validation of every
`-T` option.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate

# registers the reference policies (`--model docket/scripted -M policy=NAME`)
import docket.benchmarks.__NAME__.reference  # noqa: F401
from docket.core.headline import headline
from docket.core.options import positive

#: The task's registered name.
TASK = "docket/__NAME__"
#: The prompt of one sample; the reference policies read its `Word:` line.
PROMPT = "Spell the word backwards. Reply with the reversed word only.\\nWord: {word}"

#: The inline dataset: each word is one sample, its reversal the target (no palindromes).
WORDS: tuple[str, ...] = ("docket", "inspect", "sandbox", "policy")


def dataset() -> list[Sample]:
    """One sample per word of `WORDS`, its target the word spelled backwards.

    Returns:
        The samples, with the word as the sample id.
    """
    return [Sample(id=word, input=PROMPT.format(word=word), target=word[::-1]) for word in WORDS]


def answer_of(completion: str) -> str:
    """The answer a reply states: its last non-empty line, trimmed of spaces, quotes and
    backticks and a final full stop, case-folded ('' when the reply is empty).

    Args:
        completion: The model's reply.

    Returns:
        The normalised answer.
    """
    lines = [line for line in completion.splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1].strip().rstrip(".").strip("`'\\" ").rstrip(".").casefold()


@scorer(metrics=[accuracy(), stderr()])
def __NAME___exact() -> Scorer:
    """CORRECT when the reply's answer (`answer_of`) is the target word spelled backwards.

    Returns:
        A scorer with CORRECT or INCORRECT, the answer read and why.
    """

    async def score(state: TaskState, target: Target) -> Score:
        answer = answer_of(state.output.completion)
        right = answer == target.text.casefold()
        return Score(
            value=CORRECT if right else INCORRECT,
            answer=answer,
            explanation=f"{answer!r} {'equals' if right else 'is not'} {target.text!r}",
        )

    return score


@task
def __NAME__(max_tokens: int = 16) -> Task:
    """Spell a word backwards; exact match on the reply's last line.

    Args:
        max_tokens: Generation limit per reply (an int >= 1).

    Returns:
        The task: the inline words, answered by `generate()`, scored by exact match.
    """
    limit = positive(TASK, "max_tokens", max_tokens)
    return Task(
        dataset=dataset(),
        solver=generate(),
        scorer=__NAME___exact(),
        config=GenerateConfig(temperature=0.0, max_tokens=limit),
        version="1-A",
        **headline(
            "__NAME___exact",
            "accuracy",
            direction="higher",
            value="binary",
        ),
    )
'''

_REFERENCE = '''"""The task's reference policies (`--model docket/scripted -M policy=NAME`): the
oracle (the ceiling, accuracy 1.0) and a baseline that echoes the word (accuracy 0.0)."""

from __future__ import annotations

import re

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy

_WORD = re.compile(r"^Word: (\\S+)$", re.MULTILINE)


def _word(state: PolicyInput) -> str | None:
    """The word of the last prompt's `Word:` line, if any."""
    found = _WORD.findall(state.last_user_text)
    return found[-1] if found else None


@policy("__NAME___oracle")
def __NAME___oracle(state: PolicyInput) -> PolicyReply:
    """Spells the prompt's word backwards (accuracy 1.000)."""
    word = _word(state)
    return PolicyReply(text=word[::-1] if word else "I don't know.")


@policy("__NAME___echo")
def __NAME___echo(state: PolicyInput) -> PolicyReply:
    """Repeats the prompt's word unchanged: accuracy 0.000 (no word is a palindrome)."""
    return PolicyReply(text=_word(state) or "")
'''

_LISTING = """# inspect_evals-style listing (read by the registry, `docket list` and the suite).
title: "__TITLE__: spell a word backwards"
description: |
  A starter benchmark written by `docket new benchmark __NAME__`: four words to spell
  backwards, scored by exact match on the reply's last line. The oracle policy scores 1.0, the
  echo policy 0.0.
path: benchmarks/__NAME__
paper: null
group: Reasoning
contributors: [docket]
tags: [starter]
tasks:
  - name: docket/__NAME__
    version: "1-A"
    dataset_samples: 4
    roles: []          # required: an unbound one is an error
    optional_roles: []  # used when bound (else as its README says)
    suite:  # docket suite: roles: scripted bindings, reference policies, -T by preset
      reference_policies:
        - {policy: __NAME___oracle}
        - {policy: __NAME___echo}
changelog:
  - version: "1-A"
    changes: First release.
"""

_README = """# __TITLE__: spell a word backwards (version 1-A)

## What it measures

`docket/__NAME__` asks for a word spelled backwards (`docket` → `tekcod`) and scores the reply
by exact match: accuracy 1 when the reply's last non-empty line, trimmed of spaces, quotes,
backticks and a final full stop and case-folded, is the reversed word, else 0. Four inline words
(`WORDS` in `__NAME__.py`), none a palindrome, so repeating the word never scores.

## Run

```bash
inspect eval docket/__NAME__ --model docket/scripted -M policy=__NAME___oracle  # 1.000
inspect eval docket/__NAME__ --model docket/scripted -M policy=__NAME___echo    # 0.000
inspect eval docket/__NAME__ --model docket/smollm2
docket suite offline --task docket/__NAME__
```

## Parameters

Generated from the task's docstring by `python -m docket.benchmarks.readme_parameters`:

<!-- parameters:start -->
`docket/__NAME__`:

| Parameter | Default | Description |
|---|---|---|
| `max_tokens` | `16` | Generation limit per reply (an int >= 1). |
<!-- parameters:end -->

## What is scored

Headline: `accuracy` (higher is better, one 0/1 value per sample) of `__NAME___exact`, with its
stderr. The score's `answer` is the normalised answer read from the reply; its explanation says
whether it equals the target.

## Results

| Model / policy | accuracy | samples |
|---|---|---|
| `docket/scripted -M policy=__NAME___oracle` | 1.000 | 4 |
| `docket/scripted -M policy=__NAME___echo` | 0.000 | 4 |
| `docket/scripted -M policy=refuse` | 0.000 | 4 |

`tests/benchmarks/__NAME__/test___NAME__.py` asserts these exact values;
`docket suite offline --task docket/__NAME__` reruns them.

## Scripted reference policies (`reference.py`)

| policy | arguments | behaviour |
|---|---|---|
| `__NAME___oracle` | – | spells the prompt's `Word:` backwards: accuracy 1.000 |
| `__NAME___echo` | – | repeats the word unchanged: accuracy 0.000 |

## Limits

Four inline words: a smoke-sized starter, not a measurement. Replace the dataset (a `data/`
file read by a loader that gives one error line per bad row), the prompt and the scorer with
the benchmark's own before reporting any score.

## Changelog

Versions and their changes: `listing.yaml` (`changelog`).
"""

_TEST = '''"""The benchmark is registered and listed, its reference policies score exactly, and a
bad argument is one line."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

import docket.benchmarks.__NAME__.__NAME__ as bench
from docket.benchmarks.presets import listed_tasks
from docket.cli import main
from docket.core.inspect_private import PrerequisiteError

TASK = bench.TASK


def run(policy: str, log_dir: Path) -> EvalLog:
    """The task on the scripted `policy`, run through Inspect's registry."""
    [log] = inspect_eval(
        TASK,
        model="docket/scripted",
        model_args={"policy": policy},
        log_dir=str(log_dir),
        display="none",
    )
    assert log.status == "success"
    return log


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("__NAME___oracle", 1.0),
        ("__NAME___echo", 0.0),
        ("refuse", 0.0),
    ],
)
def test_reference_policies_score_exactly(policy: str, expected: float, tmp_path: Path) -> None:
    log = run(policy, tmp_path)
    assert log.results is not None and log.samples is not None
    assert len(log.samples) == len(bench.WORDS)
    assert log.results.scores[0].metrics["accuracy"].value == expected


def test_registered_listed_and_its_headline_declared(capsys: pytest.CaptureFixture[str]) -> None:
    registry = importlib.import_module("docket._registry")
    assert TASK in registry.REGISTERED["task"]
    built = bench.__NAME__()
    assert built.version == listed_tasks()[TASK]["version"]
    assert (built.metadata or {})["headline"]["scorer"] == "__NAME___exact"
    assert main(["list"]) == 0
    assert TASK in capsys.readouterr().out


def test_answer_of_reads_the_last_line() -> None:
    assert bench.answer_of("Sure.\\n\\n  `TEKCOD`.  \\n") == "tekcod"
    assert bench.answer_of("'tekcod.'") == "tekcod"
    assert bench.answer_of("") == ""


def test_a_bad_argument_is_one_line() -> None:
    message = rf"^{TASK}: -T max_tokens=0 must be at least 1$"
    with pytest.raises(PrerequisiteError, match=message):
        bench.__NAME__(max_tokens=0)
'''
