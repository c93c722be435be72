"""`docket suite PRESET`: every benchmark on the preset's models, roles bound, then the report.

A preset (`benchmarks/presets/*.yaml`, or any file of the same shape) names the tasks, the model
roles, and stages of models; each stage runs one Inspect `eval_set` per task into
`LOG_DIR/<task>/<stage>` (so a re-run resumes only what is missing), and the leaderboard is built
from LOG_DIR at the end. Each task gets the roles its `listing.yaml` names (for `roles: scripted`,
the scripted policies of its listing's `suite: roles:`); a role a task needs that the preset
leaves unbound stops the suite before anything runs. A listing's `suite:` block also gives the
task's reference policies (`reference_policies: true` stages) and its `-T` arguments by preset.
"""

from __future__ import annotations

import inspect as pyinspect
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from inspect_ai import eval_set
from inspect_ai.model import GenerateConfig, Model, get_model
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from rich.console import Console

from docket.agents.scripted.policy import load_policies
from docket.benchmarks.presets import listed_tasks, preset_path
from docket.reports.files import load_document

SUITE_FORMAT = "docket-suite/1"


class PresetError(ValueError):
    """A preset that cannot be used (one line naming the file and field)."""


class ModelSpec(BaseModel):
    """A model as `provider/name` plus its `-M` args."""

    model_config = ConfigDict(extra="forbid")
    model: str
    args: dict[str, Any] = {}

    @field_validator("model")
    @classmethod
    def _provider(cls, value: str) -> str:
        if "/" not in value or value.startswith("/") or value.endswith("/"):
            raise ValueError(f"model {value!r} must be provider/name")
        return value

    @property
    def label(self) -> str:
        """`provider/name k=v` as the leaderboard writes it."""
        return " ".join([self.model, *(f"{k}={v}" for k, v in sorted(self.args.items()))])


def _model_spec(value: Any) -> Any:
    return {"model": value} if isinstance(value, str) else value


class Stage(BaseModel):
    """Models run together on every task, with their own eval arguments."""

    model_config = ConfigDict(extra="forbid")
    name: str
    models: list[ModelSpec]
    reference_policies: bool = False
    skip_tasks: list[str] = []
    eval_args: dict[str, Any] = {}

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: Any) -> Any:
        return [_model_spec(v) for v in value] if isinstance(value, list) else value


class Preset(BaseModel):
    """A suite preset (`format: docket-suite/1`)."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["docket-suite/1"]
    name: str
    description: str = ""
    log_dir: str
    tasks: Literal["all"] | list[str] = "all"
    roles: Literal["scripted"] | dict[str, ModelSpec] = {}
    budget_minutes: float | None = None
    #: The drop `docket regress` should be able to rule out on these runs, and its level: a
    #: `--limit` too small to detect it is warned about before the suite runs.
    tolerance: float = 0.05
    alpha: float = 0.05
    eval_args: dict[str, Any] = {}
    #: `-T` arguments per task, the same for every model of every stage (rows stay comparable).
    task_args: dict[str, dict[str, Any]] = {}
    stages: list[Stage]

    @field_validator("roles", mode="before")
    @classmethod
    def _roles(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _model_spec(v) for k, v in value.items()}
        return value


def _eval_set_args() -> set[str]:
    params = set(pyinspect.signature(eval_set).parameters) - {"tasks", "model", "kwargs"}
    return params | set(GenerateConfig.model_fields)


def _check_eval_args(source: str, where: str, args: dict[str, Any]) -> None:
    reserved = {"log_dir", "model_roles", "display"}
    for key in args:
        if key in reserved or key not in _eval_set_args():
            raise PresetError(f"{source}: {where}eval_args: {key!r} is not an eval_set argument")


def load_preset(name_or_path: str) -> Preset:
    """A validated preset; `PresetError` (one line) when the file or a field is bad."""
    path = preset_path(name_or_path)
    data = load_document(path, PresetError, "preset (shipped: offline, api)")
    try:
        preset = Preset.model_validate(data)
    except ValidationError as ex:
        first = ex.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "preset"
        raise PresetError(f"{path}: {where}: {first['msg']}") from None
    _check_eval_args(str(path), "", preset.eval_args)
    for index, stage in enumerate(preset.stages):
        _check_eval_args(str(path), f"stages.{index}.", stage.eval_args)
    return preset


@dataclass
class TaskPlan:
    """One eval_set: a task, its models and roles, its log folder and eval arguments."""

    task: str
    stage: str
    models: list[ModelSpec]
    roles: dict[str, ModelSpec]
    log_dir: Path
    eval_args: dict[str, Any] = field(default_factory=dict)
    task_args: dict[str, Any] = field(default_factory=dict)


class SuiteBindings(BaseModel):
    """The `suite:` block of a task in its benchmark's listing.yaml."""

    model_config = ConfigDict(extra="forbid")
    #: Scripted policy per model role, bound by `roles: scripted` presets; every role the task
    #: requires must be bound here (an unbound role is an error).
    roles: dict[str, str] = {}
    #: `-M` arguments (with `policy`) of the task's own reference policies (known scores, see its
    #: README), run beside a `reference_policies: true` stage's models; missing ones are skipped.
    reference_policies: list[dict[str, Any]] = []
    #: `-T` arguments by preset name; the preset's own `task_args` take precedence.
    task_args: dict[str, dict[str, Any]] = {}


def registered_tasks() -> list[str]:
    """Every docket task registered for Inspect, in registry order."""
    from docket._registry import REGISTERED

    return list(REGISTERED["task"])


def suite_bindings(task: str) -> SuiteBindings:
    """The `suite:` block of `task`'s listing (empty for an unlisted task or one without it).

    Args:
        task: A task name (`docket/<task>`).

    Returns:
        The validated bindings; `PresetError` (one line) when the block is malformed.
    """
    listed = listed_tasks().get(task) or {}
    try:
        return SuiteBindings.model_validate(listed.get("suite") or {})
    except ValidationError as ex:
        first = ex.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "suite"
        folder = listed.get("benchmark", "?")
        raise PresetError(
            f"benchmarks/{folder}/listing.yaml: {task}: suite.{where}: {first['msg']}"
        ) from None


def _scripted_roles(task: str) -> dict[str, ModelSpec]:
    return {
        role: ModelSpec(model="docket/scripted", args={"policy": policy})
        for role, policy in suite_bindings(task).roles.items()
    }


def _reference_models(task: str) -> list[ModelSpec]:
    policies = load_policies()
    return [
        ModelSpec(model="docket/scripted", args=dict(args))
        for args in suite_bindings(task).reference_policies
        if args.get("policy") in policies
    ]


def task_args(preset: Preset, task: str) -> dict[str, Any]:
    """The `-T` arguments of `task` in `preset`: its listing's for this preset, then the preset's.

    Args:
        preset: The suite preset (its `name` selects the listing's `suite: task_args:` entry).
        task: A task name (`docket/<task>`).

    Returns:
        The merged arguments (the preset's `task_args` win on a shared key).
    """
    listed = suite_bindings(task).task_args.get(preset.name, {})
    return {**listed, **preset.task_args.get(task, {})}


def task_roles(preset: Preset, task: str) -> dict[str, ModelSpec]:
    """The roles bound for `task`.

    `roles: scripted`: the task's scripted policies in its listing's `suite: roles:` (a required
    role missing there makes that task fail with its own one-line error, the others still run).
    A mapping: the task's required and optional roles from its listing.yaml (every mapped role for
    an unlisted task); a required role the preset does not bind is a `PresetError`.
    """
    listed = listed_tasks().get(task)
    if preset.roles == "scripted":
        return _scripted_roles(task)
    assert isinstance(preset.roles, dict)
    if listed is None:
        return dict(preset.roles)
    needed = list(listed.get("roles") or [])
    missing = [r for r in needed if r not in preset.roles]
    if missing:
        raise PresetError(
            f"{task}: preset {preset.name} binds no '{missing[0]}' role "
            f"(add it under roles:, or --role {missing[0]}=provider/model)"
        )
    wanted = needed + list(listed.get("optional_roles") or [])
    return {r: preset.roles[r] for r in wanted if r in preset.roles}


def plan(
    preset: Preset,
    log_dir: Path,
    tasks: list[str] | None = None,
    models: list[str] | None = None,
    roles: dict[str, str] | None = None,
    limit: int | None = None,
    stages: list[str] | None = None,
) -> list[TaskPlan]:
    """Every (stage, task) eval_set the suite will run, checked before anything runs."""
    chosen = tasks or (registered_tasks() if preset.tasks == "all" else list(preset.tasks))
    unknown = [t for t in chosen if t not in registered_tasks()]
    if unknown:
        raise PresetError(
            f"unknown task {unknown[0]!r}; registered: {', '.join(registered_tasks())}"
        )
    stray = [t for t in preset.task_args if t not in registered_tasks()]
    if stray:
        raise PresetError(f"preset {preset.name}: task_args names unknown task {stray[0]!r}")
    if roles:
        if preset.roles == "scripted":
            preset = preset.model_copy(update={"roles": {}})
        merged = {**preset.roles, **{k: ModelSpec(model=v) for k, v in roles.items()}}  # type: ignore[dict-item]
        preset = preset.model_copy(update={"roles": merged})
    chosen_stages = preset.stages
    if stages:
        names = [s.name for s in preset.stages]
        unknown_stage = [s for s in stages if s not in names]
        if unknown_stage:
            raise PresetError(
                f"preset {preset.name} has no stage {unknown_stage[0]!r}: {', '.join(names)}"
            )
        chosen_stages = [s for s in preset.stages if s.name in stages]
    if models:
        chosen_stages = [Stage(name="models", models=[ModelSpec(model=m) for m in models])]
    plans: list[TaskPlan] = []
    for stage in chosen_stages:
        for task in [t for t in chosen if t not in stage.skip_tasks]:
            extra = _reference_models(task) if stage.reference_policies else []
            args = {**preset.eval_args, **stage.eval_args}
            if limit is not None:
                args["limit"] = limit
            plans.append(
                TaskPlan(
                    task=task,
                    stage=stage.name,
                    models=[*stage.models, *extra],
                    roles=task_roles(preset, task),
                    log_dir=log_dir / task.replace("/", "_") / stage.name,
                    eval_args=args,
                    task_args=task_args(preset, task),
                )
            )
    return plans


def _model(spec: ModelSpec) -> Model:
    return get_model(spec.model, **spec.args)


def run_plan(
    plans: list[TaskPlan], budget_minutes: float | None, display: str = "plain"
) -> tuple[bool, list[str]]:
    """Run every eval_set in order; (all succeeded, skipped/failed lines)."""
    console = Console()
    started = time.monotonic()
    ok, problems = True, []
    first_stage = plans[0].stage if plans else ""
    for item in plans:
        elapsed = (time.monotonic() - started) / 60
        if budget_minutes is not None and item.stage != first_stage and elapsed > budget_minutes:
            problems.append(f"{item.task} / {item.stage}: skipped, time budget spent")
            continue
        try:
            success, _ = eval_set(
                tasks=item.task,
                task_args=item.task_args,
                model=[_model(m) for m in item.models],
                model_roles={r: _model(m) for r, m in item.roles.items()} or None,
                log_dir=str(item.log_dir),
                display=display,  # type: ignore[arg-type]
                fail_on_error=False,
                **item.eval_args,
            )
        except Exception as ex:  # noqa: BLE001 - the suite goes on with the other tasks
            line = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
            problems.append(f"{item.task} / {item.stage}: {type(ex).__name__}: {line}")
            console.print(f"[red]{problems[-1]}[/red]", soft_wrap=True, markup=False)
            ok = False
            continue
        ok &= bool(success)
    return ok, problems


def limit_warning(preset: Preset, limit: int | None) -> str | None:
    """A warning when `--limit` samples per task cannot detect the preset's tolerance.

    Args:
        preset: The suite preset (its `tolerance` and `alpha`).
        limit: The `--limit` given on the command line (None: no warning).

    Returns:
        One line, or None when the limit suffices: below `power.needed_n` for an unchanged 0/1
        headline (72 samples at tolerance 0.05, alpha 0.05) no run can pass `docket regress`,
        whatever it scores.
    """
    from docket.reports.power import needed_n

    if limit is None or not preset.tolerance > 0 or not 0 < preset.alpha < 1:
        return None
    floor = needed_n("binary", 0.0, preset.tolerance, preset.alpha)
    if floor is None or limit >= floor:
        return None
    return (
        f"warning: --limit {limit} cannot detect preset {preset.name}'s tolerance "
        f"{preset.tolerance:g}: at alpha {preset.alpha:g} even an unchanged 0/1 headline needs "
        f"{floor} samples per task to pass `docket regress` (see `docket power`)"
    )


def describe(plans: list[TaskPlan]) -> list[str]:
    """One line per eval_set (for --dry-run)."""
    return [
        f"{p.stage}: {p.task} on {', '.join(m.label for m in p.models)}"
        + (f"; roles {', '.join(f'{r}={m.label}' for r, m in p.roles.items())}" if p.roles else "")
        + (f"; -T {p.task_args}" if p.task_args else "")
        + (f"; {p.eval_args}" if p.eval_args else "")
        + f" -> {p.log_dir}"
        for p in plans
    ]
