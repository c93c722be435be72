"""A task's parameters table is generated from its signature and its docstring's `Args:`."""

from __future__ import annotations

from docket.benchmarks.presets import listings
from docket.benchmarks.readme_parameters import benchmark_tasks
from docket.core.task_parameters import parameter_rows, parameter_table, undocumented


def _task(split: str = "test", size: int = 200, pattern: str = "a|b", *, seed: int) -> None:
    """A task.

    Args:
        split: Which split
            (wrapped over two lines).
        size: Samples.
        pattern: A pattern.
    """


def test_the_table_gives_each_parameter_its_default_and_args_text() -> None:
    assert parameter_table("docket/t", _task).splitlines() == [
        "`docket/t`:",
        "",
        "| Parameter | Default | Description |",
        "|---|---|---|",
        "| `split` | `'test'` | Which split (wrapped over two lines). |",
        "| `size` | `200` | Samples. |",
        "| `pattern` | `'a\\|b'` | A pattern. |",
        "| `seed` | (required) |  |",
    ]
    assert undocumented(_task) == ["seed"]


def test_long_defaults_are_cut() -> None:
    def task(text: str = "x" * 100) -> None:
        """T.

        Args:
            text: Text.
        """

    [(_, default, _)] = parameter_rows(task)
    assert default == "`'" + "x" * 38 + "…`" and len(default) == 42


def test_every_listed_task_documents_every_parameter() -> None:
    missing = {
        name: undocumented(task)
        for folder, listing in listings().items()
        for name, task in benchmark_tasks(folder, listing)
        if undocumented(task)
    }
    assert missing == {}
