"""One `-T config=` parameter for a task's less common knobs (as inspect_evals keeps signatures
short).

A task with many options keeps the common ones as `@task` parameters and takes the rest as a
pydantic model deriving `TaskConfig`: each field has a description, the default the parameter
had and its bounds. `task_config` reads it from what `-T config=` passes:

- nothing (`None`, `''`): every default;
- a YAML file path (`-T config=knobs.yaml`): a mapping of field names to values;
- a mapping (`-T config='{theta: 0.05}'`, or `task_args={"config": {...}}` from Python);
- an instance of the model itself (from Python).

Values take exactly their type, as other task arguments do (`checked`): no "1" for 1 and no true
for 1; an int is accepted for a float. An unknown key, a bad value, an unreadable file or a file
that is not a mapping is one `PrerequisiteError` line naming the task, the source and the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from docket.core.inspect_private import PrerequisiteError


class TaskConfig(BaseModel):
    """Base of a task's `-T config=` model: strict types, no unknown keys, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    def changed(self) -> dict[str, Any]:
        """The fields set to something other than their default (for the task's metadata).

        Returns:
            Field name -> value, in field order; empty when every field has its default.
        """
        defaults = type(self)()
        return {
            name: getattr(self, name)
            for name in type(self).model_fields
            if getattr(self, name) != getattr(defaults, name)
        }


C = TypeVar("C", bound=TaskConfig)


def _read(task: str, path: str) -> object:
    """The YAML document of the config file at `path` (an empty file is an empty mapping)."""

    def unreadable(reason: object) -> PrerequisiteError:
        return PrerequisiteError(f"{task}: -T config={path!r}: cannot read it ({reason})")

    try:
        file = Path(path).expanduser()
        if not file.is_file():
            missing = "not a file" if file.exists() else "no such file"
            raise unreadable("a folder" if file.is_dir() else missing)
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError, RuntimeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise unreadable(reason) from None
    try:
        found = yaml.safe_load(text)
    except yaml.YAMLError as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise PrerequisiteError(f"{task}: -T config={path!r}: not valid YAML ({first})") from None
    return {} if found is None else found


def _problem(model: type[TaskConfig], error: ValidationError) -> str:
    """The first validation error as `key: what is wrong (got VALUE)`."""
    first = error.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "config"
    if first["type"] == "extra_forbidden":
        return f"unknown key {key!r}; accepted: {', '.join(model.model_fields)}"
    message = str(first["msg"]).replace("\n", " ")
    return f"{key}: {message} (got {first.get('input')!r})"


def task_config(task: str, model: type[C], config: object) -> C:
    """The task's config model from a `-T config=` value.

    Args:
        task: The task's name, which starts the error line (`docket/correct_localization`).
        model: The task's `TaskConfig` subclass.
        config: `None` or `''` (the defaults), a YAML file path, a mapping of field values or
            an instance of `model`.

    Returns:
        The validated config.

    Raises:
        PrerequisiteError: One line: the file cannot be read or is not a YAML mapping, a key is
            not a field of `model`, or a value has the wrong type or is out of bounds.
    """
    if config is None or config == "":
        return model()
    if isinstance(config, model):
        return config
    source = "-T config"
    if isinstance(config, str | os.PathLike):
        source = f"-T config={os.fspath(config)!r}"
        config = _read(task, os.fspath(config))
    if not isinstance(config, Mapping):
        raise PrerequisiteError(
            f"{task}: {source} must be a YAML file path or a mapping of "
            f"{', '.join(model.model_fields)}; got {type(config).__name__}"
        )
    try:
        return model.model_validate(dict(config))
    except ValidationError as error:
        raise PrerequisiteError(f"{task}: {source}: {_problem(model, error)}") from None
