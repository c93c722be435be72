"""A task's `-T` parameters as a Markdown table, generated from its signature and docstring.

Every benchmark README holds, between `<!-- parameters:start -->` and `<!-- parameters:end -->`,
one table per task: each parameter's name, default and the text of its Google-style `Args:`
entry. `python -m docket.benchmarks.readme_parameters` rewrites the blocks and a test checks that
no README has drifted from its tasks.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from docstring_parser import parse

from docket.core.task_config import TaskConfig

#: The marker name of the parameters block in a README.
PARAMETERS_BLOCK = "parameters"

#: The longest default shown in full; longer ones are cut with an ellipsis.
MAX_DEFAULT = 40


def _cell(text: str) -> str:
    """`text` on one line, safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _shown(value: object) -> str:
    shown = repr(value)
    if len(shown) > MAX_DEFAULT:
        shown = shown[: MAX_DEFAULT - 1] + "…"
    return f"`{_cell(shown)}`"


def _default(parameter: inspect.Parameter) -> str:
    if parameter.default is inspect.Parameter.empty:
        return "(required)"
    return _shown(parameter.default)


def parameter_rows(task: Callable[..., Any]) -> list[tuple[str, str, str]]:
    """(name, default, description) of each parameter of `task`, in signature order.

    Args:
        task: A task function (Inspect's `@task` keeps the signature and docstring).

    Returns:
        One row per parameter; the description is its `Args:` entry, or "" when it has none.
    """
    described = {p.arg_name: p.description or "" for p in parse(task.__doc__ or "").params}
    return [
        (name, _default(parameter), _cell(described.get(name, "")))
        for name, parameter in inspect.signature(task).parameters.items()
        if parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def config_model(task: Callable[..., Any]) -> type[TaskConfig] | None:
    """The `TaskConfig` model the task's `config` parameter accepts, if it has one.

    Args:
        task: A task function.

    Returns:
        The first `TaskConfig` subclass in the annotation of its `config` parameter, or None.
    """
    hint = typing.get_type_hints(task).get("config")
    for kind in typing.get_args(hint) or (hint,):
        if isinstance(kind, type) and issubclass(kind, TaskConfig):
            return kind
    return None


def config_rows(model: type[TaskConfig]) -> list[tuple[str, str, str]]:
    """(key, default, description) of each field of a task's `-T config=` model."""
    return [
        (name, _shown(field.default), _cell(field.description or ""))
        for name, field in model.model_fields.items()
    ]


def undocumented(task: Callable[..., Any]) -> list[str]:
    """The parameters of `task` that its docstring's `Args:` does not describe."""
    return [name for name, _, text in parameter_rows(task) if not text]


def parameter_table(name: str, task: Callable[..., Any]) -> str:
    """The Markdown table of `task`'s parameters under its name.

    Args:
        name: The task's registered name (`docket/<task>`).
        task: The task function.

    Returns:
        A line naming the task and a three-column table (parameter, default, description),
        then, when its `config` parameter takes a `TaskConfig` model, a table of its keys.
    """
    lines = [
        f"`{name}`:",
        "",
        "| Parameter | Default | Description |",
        "|---|---|---|",
        *(f"| `{p}` | {d} | {text} |" for p, d, text in parameter_rows(task)),
    ]
    model = config_model(task)
    if model is not None:
        lines += [
            "",
            f"`{name}` `-T config=` keys (`{model.__name__}`; a YAML file or a mapping):",
            "",
            "| Key | Default | Description |",
            "|---|---|---|",
            *(f"| `{k}` | {d} | {text} |" for k, d, text in config_rows(model)),
        ]
    return "\n".join(lines)
