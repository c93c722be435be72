"""A digest of everything a built `Task` holds, so a refactor of a task's parameters can be
checked to build the very same task: its dataset, solver (with every value its closures and
their objects hold), scorer, generate config, limits, sandbox, version and metadata.

Functions are followed into their closure cells, defaults and attributes (Inspect's registry
info and parameters), objects into their fields; sets are sorted (mappings keep their order); a
path under the temporary directory (a fresh cache file per build) reads as `<tmp>`, the
checkout's path as `<root>`, and memory addresses never enter.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
import tempfile
import types
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

from inspect_ai import Task
from pydantic import BaseModel

_TMPDIR = tempfile.gettempdir()
_TMP = re.compile(re.escape(_TMPDIR) + r"/[^\s'\"]*")
#: The checkout (shipped data paths differ between machines).
_ROOT = str(Path(__file__).resolve().parents[2])
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
#: Deep enough for a solver's closure -> its stream -> its config -> a trajectory's steps.
_DEPTH = 14


def _text(value: str) -> str:
    if _ROOT in value:
        value = value.replace(_ROOT, "<root>")
    if _TMPDIR in value:
        value = _TMP.sub("<tmp>", value)
    return _ADDRESS.sub("", value) if " at 0x" in value else value


def canonical(
    obj: object,
    depth: int = 0,
    seen: frozenset[int] = frozenset(),
    memo: dict[int, Any] | None = None,
) -> Any:
    """`obj` as JSON-ready data that two builds of the same task give alike.

    Args:
        obj: Any value a task holds.
        depth: The nesting reached (past `_DEPTH` only the type is kept).
        seen: Ids of the objects on the path (a cycle is cut).
        memo: What each object already walked at this depth gave (a trajectory the dataset,
            the solver and its cache all hold is walked once).

    Returns:
        Nested lists, dicts, strings and numbers.
    """
    if obj is None or isinstance(obj, bool | int):
        return obj
    if isinstance(obj, float):
        return repr(obj)
    if isinstance(obj, str):
        return _text(obj)
    if isinstance(obj, bytes):
        return "sha256:" + hashlib.sha256(obj).hexdigest()
    if isinstance(obj, PurePath):
        return _text(str(obj))
    if isinstance(obj, enum.Enum):
        return canonical(obj.value)
    if isinstance(obj, type | types.ModuleType):
        return f"<{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}>"
    if depth > _DEPTH or id(obj) in seen:
        return f"<{type(obj).__qualname__}>"
    memo = {} if memo is None else memo
    key = id(obj) * 64 + depth
    if key not in memo:
        memo[key] = _walk(obj, depth, seen | {id(obj)}, memo)
    return memo[key]


def _walk(obj: object, depth: int, seen: frozenset[int], memo: dict[int, Any]) -> Any:
    """`canonical` of a container or object (one level, then `canonical` of its parts)."""

    def inner(value: object) -> Any:
        return canonical(value, depth + 1, seen, memo)

    if isinstance(obj, Mapping):  # in insertion order, which the same build repeats
        return {"<map>": [[inner(k), inner(v)] for k, v in obj.items()]}
    if isinstance(obj, list | tuple):
        return [inner(v) for v in obj]
    if isinstance(obj, set | frozenset):
        return {"<set>": sorted((inner(v) for v in obj), key=lambda v: json.dumps(v))}
    if hasattr(obj, "tobytes") and hasattr(obj, "shape"):  # numpy arrays, torch tensors
        return {"<array>": [str(obj.shape), hashlib.sha256(obj.tobytes()).hexdigest()]}
    if isinstance(obj, BaseModel):
        fields = {name: inner(getattr(obj, name)) for name in type(obj).model_fields}
        return {"<model>": type(obj).__qualname__, **fields}
    if dataclasses.is_dataclass(obj):
        fields = {f.name: inner(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return {"<dataclass>": type(obj).__qualname__, **fields}
    if isinstance(obj, types.FunctionType):
        cells = [inner(c.cell_contents) for c in obj.__closure__ or () if _filled(c)]
        return {
            "<function>": obj.__qualname__,
            "cells": cells,
            "defaults": inner(obj.__defaults__),
            "kwdefaults": inner(obj.__kwdefaults__),
            "attributes": inner(vars(obj)),
        }
    if isinstance(obj, types.MethodType):
        return {"<method>": obj.__func__.__qualname__, "self": inner(obj.__self__)}
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        return {"<object>": type(obj).__qualname__, **{k: inner(v) for k, v in state.items()}}
    slots = [s for c in type(obj).__mro__ for s in getattr(c, "__slots__", ())]
    if slots:
        values = {s: inner(getattr(obj, s)) for s in slots if hasattr(obj, s)}
        return {"<object>": type(obj).__qualname__, **values}
    return f"<{type(obj).__qualname__}>"


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


#: What records the call rather than the task: the arguments (the same task is built from
#: `theta=0.05` before and `config={theta: 0.05}` after a knob moves) and the display name.
_CALL = {"_name", "__registry_params__", "__task_all_params__"}


def fingerprint(task: Task, drop_metadata: tuple[str, ...] = ("config",)) -> dict[str, str]:
    """A sha256 per attribute of `task`, leaving out what records the call.

    Args:
        task: A built task.
        drop_metadata: Metadata keys left out (`config`: the knobs a `-T config=` changed,
            which the task records and a task built from keyword parameters did not).

    Returns:
        Attribute name -> the sha256 of its canonical JSON (the first 16 hex digits).
    """
    found: dict[str, str] = {}
    memo: dict[int, Any] = {}
    for name, value in sorted(vars(task).items()):
        if name in _CALL:
            continue
        if name == "metadata" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in drop_metadata}
        if name == "__registry_info__":  # its type and name; its metadata lists the parameters
            value = (value.type, value.name)
        text = json.dumps(canonical(value, memo=memo), sort_keys=True)
        found[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return found
