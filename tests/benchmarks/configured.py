"""Build a task from keyword arguments, the knobs its `-T config=` model holds moved into
`config` (tests written before the knobs moved keep their calls readable)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspect_ai import Task

from docket.core.task_config import TaskConfig


def configured(task: Callable[..., Task], model: type[TaskConfig], **args: Any) -> Task:
    """`task(**args)` with every key of `args` that is a field of `model` passed in `config`.

    Args:
        task: A task function taking `config`.
        model: Its `TaskConfig` model.
        **args: Task parameters and config knobs, mixed.

    Returns:
        The built task.
    """
    knobs = {key: args.pop(key) for key in list(args) if key in model.model_fields}
    return task(**args, config=knobs)
