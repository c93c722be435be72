"""Progress bars for the training loops (rich), silent when `enabled` is false."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class StepBar(Protocol):
    """Advance one step and show the latest values."""

    def __call__(self, **values: float) -> None: ...


@contextmanager
def step_bar(total: int, description: str, *, enabled: bool = True) -> Iterator[StepBar]:
    """A progress bar over `total` steps; the yielded callable advances it by one step."""
    if not enabled:
        yield lambda **values: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[values]}"),
    )
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(description, total=total, values="")

        def advance(**values: float) -> None:
            shown = " ".join(f"{k}={v:.4g}" for k, v in values.items())
            progress.update(task, advance=1, values=shown)

        yield advance
