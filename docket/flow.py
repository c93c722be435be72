"""Inspect Flow interop: a suite's plan as a Flow spec, and docket's checks on Flow's runner.

`docket suite PRESET --emit-flow spec.py` writes the eval_sets `docket suite PRESET` would run
(the same `suite.plan`: roles bound from the listings, `-T` arguments, reference policies, the
merged eval arguments, every command-line override) as an Inspect Flow spec; `flow run spec.py`
then runs them through Flow's runner into the spec's one log directory. Each (task, model) is one
`FlowTask` with its `model_roles`; the stage's generation settings are the task's `config` (as
the suite passes them to `eval_set`) and each role model's own `config` (stage settings under its
own, as the suite builds role models); per-task eval arguments (`time_limit`, `message_limit`,
`fail_on_error`, ...) are `FlowTask` fields and eval-set-wide ones (`limit`, `retry_attempts`,
...) the spec's `options`, which a Flow spec sets once: stages that differ there are one line
(emit one with `--stage`).

The spec is a Python file that imports this module, which brings docket's additions to
`flow run` (Flow's `after_load` hook, `docket_flow`):

- Roles bound while each task is built (`roles_at_build`): Flow builds a task with its model
  active but binds its `model_roles` only afterwards (`task_with`), so tasks that check or read
  their roles when built (ANCHOR's audit, SCSUFF, CORRECT, DocVAL's teacher, ...) would stop
  with "role unbound"; each task with roles is built with them bound, as `eval_set` builds it.
- The preflight: `docket doctor`'s blocking checks, one call to every network model, the
  tool-call probe and the image-input probe, as `docket suite` runs them; a failure prints its
  lines and nothing runs (skipped by `flow config`, `flow check` and `flow run --dry-run`).
- Errored samples (`FlowSettle`, an Inspect hook the preflight enables): when the eval set
  ends, each log's samples whose model never answered are marked errored
  (`suite.settle_errors`), so no metric counts them and the next run re-runs them, and each
  errored log is named. `flow run`'s exit status does not count them: `docket check LOGDIR`
  does.
"""

from __future__ import annotations

import inspect as pyinspect
import pprint
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.hooks import EvalSetEnd, Hooks, hooks
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import GenerateConfig, Model, get_model, model_roles
from inspect_flow import (
    FlowModel,
    FlowOptions,
    FlowSpec,
    FlowTask,
    after_load,
)
from inspect_flow.api import dump_spec
from pydantic import ValidationError
from rich.console import Console

from docket import compatible, endpoints
from docket.core.inspect_private import init_model_roles, task_create
from docket.core.text import printable
from docket.suite import (
    ImageTask,
    ModelSpec,
    PresetError,
    TaskPlan,
    check_endpoints,
    check_prerequisites,
    fit_image_tasks,
    generate_config,
    settle_errors,
)

#: Key of docket's entries in the spec's and each task's `flow_metadata`.
FLOW_KEY = "docket"


#: What docket's `run_plan` passes to every eval_set unless the preset says otherwise.
SUITE_DEFAULTS: dict[str, Any] = {"fail_on_error": True, "continue_on_fail": True}

#: Flow's runner retries an errored sample 3 times by default, Inspect's `eval_set` never: the
#: spec states Inspect's, so Flow runs what the suite runs.
INSPECT_RETRY_ON_ERROR = 0


def _eval_set_params() -> set[str]:
    return set(pyinspect.signature(eval_set).parameters) - {"tasks", "model", "kwargs"}


def task_fields() -> set[str]:
    """The eval_set arguments a Flow spec sets per task (`FlowTask` fields).

    Returns:
        Argument names (`time_limit`, `message_limit`, `fail_on_error`, ...).
    """
    return (_eval_set_params() & set(FlowTask.model_fields)) - {"model_roles", "solver"}


def option_fields() -> set[str]:
    """The eval_set arguments a Flow spec sets once for the eval set (`FlowOptions` fields).

    Returns:
        Argument names (`limit`, `retry_attempts`, `max_tasks`, ...), none of `task_fields`.
    """
    reserved = {"display", "log_dir_allow_dirty", "bundle_dir"}
    return (_eval_set_params() & set(FlowOptions.model_fields)) - task_fields() - reserved


def _config(values: dict[str, Any]) -> GenerateConfig | None:
    config = GenerateConfig(**values)
    return config if config.model_dump(exclude_none=True) else None


def _flow_model(spec: ModelSpec, config: GenerateConfig | None) -> FlowModel:
    fields: dict[str, Any] = {"name": spec.model}
    if spec.args:
        fields["model_args"] = dict(spec.args)
    if spec.base_url:
        fields["base_url"] = spec.base_url
    if config is not None:
        fields["config"] = config
    return FlowModel(**fields)


def _metadata(item: TaskPlan) -> dict[str, Any]:
    found: dict[str, Any] = {"stage": item.stage}
    if item.role_sources:
        found["role_sources"] = dict(item.role_sources)
    if item.image_task is not None:
        found["image_task"] = item.image_task.model_dump()
    if item.forced_task_args:
        found["forced_task_args"] = sorted(item.forced_task_args)
    return {FLOW_KEY: found}


def _split_args(
    item: TaskPlan, options: dict[str, tuple[Any, str]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(task fields, generation settings) of a plan; eval-set-wide values go into `options`."""
    args = {**SUITE_DEFAULTS, **item.eval_args}
    per_task: dict[str, Any] = {}
    generation: dict[str, Any] = {}
    where = f"--emit-flow: {item.task} / {item.stage}"
    for key, value in args.items():
        if key in GenerateConfig.model_fields:
            generation[key] = value
        elif key in task_fields():
            per_task[key] = value
        elif key in option_fields():
            if key in options and options[key][0] != value:
                first, stage = options[key]
                raise PresetError(
                    f"{where}: eval argument {key!r} is {value!r} here and {first!r} in stage "
                    f"{stage}; a Flow spec sets it once for every task (emit one stage with "
                    f"--stage, or give --{key.replace('_', '-')})"
                )
            options[key] = (value, item.stage)
        else:
            raise PresetError(f"{where}: eval argument {key!r} has no Inspect Flow equivalent")
    return per_task, generation


def flow_spec(plans: list[TaskPlan], log_dir: str, preset: str) -> FlowSpec:
    """The Inspect Flow spec of a suite's plans: one `FlowTask` per (task, model).

    Args:
        plans: The suite's plans (`suite.plan`), in run order.
        log_dir: The spec's log directory (a local path or a URL Inspect can write to).
        preset: The preset's name, kept in the spec's `flow_metadata`.

    Returns:
        The spec; `PresetError` (one line) for an eval argument Flow cannot express or one
        that must be the same for every task but is not.
    """
    options: dict[str, tuple[Any, str]] = {}
    tasks: list[FlowTask] = []
    for item in plans:
        per_task, generation = _split_args(item, options)
        stage_config = generate_config(generation)
        roles = {
            role: _flow_model(spec, stage_config.merge(GenerateConfig(**spec.config)))
            for role, spec in item.roles.items()
        }
        for model in item.models:
            fields: dict[str, Any] = {
                "name": item.task,
                "model": _flow_model(model, _config(model.config)),
                "flow_metadata": _metadata(item),
                **per_task,
            }
            if item.task_args:
                fields["args"] = dict(item.task_args)
            if roles:
                fields["model_roles"] = roles
            if generation:
                fields["config"] = stage_config
            try:
                tasks.append(FlowTask(**fields))
            except ValidationError as ex:
                first = ex.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise PresetError(
                    f"--emit-flow: {item.task} / {item.stage}: {where}: {first['msg']}"
                ) from None
    chosen = {key: value for key, (value, _) in options.items()}
    chosen.setdefault("retry_on_error", INSPECT_RETRY_ON_ERROR)
    return FlowSpec(
        log_dir=log_dir,
        execution_type="inproc",
        options=FlowOptions(**chosen),
        tasks=tasks,
        flow_metadata={FLOW_KEY: {"preset": preset}},
    )


def _python_source(data: dict[str, Any], command: str) -> str:
    body = pprint.pformat(data, indent=1, width=99, sort_dicts=False)
    return (
        f'"""Inspect Flow spec written by `{command}`.\n\n'
        "Run it with `flow run` where docket is installed. docket.flow's `docket_flow` runs\n"
        "after the spec loads: each task is built with its roles bound, docket's preflight\n"
        "(doctor, endpoints, tool calls, image input) runs, and samples whose model never\n"
        "answered are marked errored when the eval set ends.\n"
        '"""\n\n'
        "from inspect_flow.api import load_spec_data\n\n"
        "from docket.flow import FlowSettle, docket_flow  # noqa: F401 - docket's additions\n"
        "\n"
        f"load_spec_data(\n{body}\n)\n"
    )


def write_spec(spec: FlowSpec, path: Path, command: str) -> Path:
    """Write `spec` as a Python Flow spec that imports docket's additions (`docket.flow`).

    Args:
        spec: The spec (`flow_spec`).
        path: The `.py` file to write.
        command: The command that wrote it, for the file's docstring.

    Returns:
        The path written; `PresetError` (one line) for a path that is not `.py`.
    """
    if path.suffix != ".py":
        raise PresetError(
            f"--emit-flow {path}: the spec is a Python file (.py): it imports docket's "
            "preflight, role binding and errored-sample handling"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_python_source(dump_spec(spec), command))
    return path


def _model_spec(model: Any) -> ModelSpec | None:
    if isinstance(model, str):
        return ModelSpec(model=model)
    if not isinstance(model, FlowModel) or not isinstance(model.name, str):
        return None
    config = model.config if isinstance(model.config, GenerateConfig) else GenerateConfig()
    return ModelSpec(
        model=model.name,
        args=dict(model.model_args) if isinstance(model.model_args, dict) else {},
        base_url=model.base_url if isinstance(model.base_url, str) else None,
        config=config.model_dump(exclude_none=True),
    )


def _docket_metadata(task: FlowTask) -> dict[str, Any]:
    metadata = task.flow_metadata if isinstance(task.flow_metadata, dict) else {}
    found = metadata.get(FLOW_KEY)
    return found if isinstance(found, dict) else {}


def plans_from_spec(spec: FlowSpec) -> list[tuple[FlowTask, TaskPlan]]:
    """docket's plans of a Flow spec's tasks (one model each), for the preflight checks.

    Args:
        spec: A loaded Flow spec (tasks given as Inspect `Task` objects are skipped: docket
            cannot tell their models).

    Returns:
        Each `FlowTask` with a registered task name and a named model, with its plan.
    """
    found: list[tuple[FlowTask, TaskPlan]] = []
    for task in spec.tasks or []:
        if not isinstance(task, FlowTask) or not isinstance(task.name, str):
            continue
        model = _model_spec(task.model)
        if model is None:
            continue
        roles: dict[str, ModelSpec] = {}
        bound = task.model_roles if isinstance(task.model_roles, dict) else {}
        for role, value in bound.items():
            for each in value if isinstance(value, list) else [value]:
                spec_of = _model_spec(each)
                if spec_of is not None:
                    roles.setdefault(role, spec_of)
        docket = _docket_metadata(task)
        image = docket.get("image_task")
        plan = TaskPlan(
            task=task.name,
            stage=str(docket.get("stage", "flow")),
            models=[model],
            roles=roles,
            log_dir=Path(str(spec.log_dir or ".")),
            task_args=dict(task.args) if isinstance(task.args, dict) else {},
            image_task=ImageTask.model_validate(image) if isinstance(image, dict) else None,
            forced_task_args=set(docket.get("forced_task_args") or []),
            role_sources=dict(docket.get("role_sources") or {}),
        )
        found.append((task, plan))
    return found


class PreflightError(RuntimeError):
    """docket's preflight stopped a Flow run; `lines` are the problems, each with its fix."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


#: The spec whose run the settle hook serves (set by `docket_preflight`).
ACTIVE: list[FlowSpec] = []


def _running() -> bool:
    """Whether this spec load starts a run: not `flow config`/`check`/`list`, not --dry-run."""
    import click

    context = click.get_current_context(silent=True)
    if context is None or context.command.name is None:
        return True  # inspect_flow.api.load_spec, then run
    return context.command.name == "run" and not context.params.get("dry_run")


def preflight(spec: FlowSpec, say: Callable[[str], None] | None = None) -> list[str]:
    """Run `docket suite`'s checks on a Flow spec; fit image tasks' arguments in place.

    Args:
        spec: The loaded Flow spec (its tasks' `args` change where an image task's reader
            cannot read images, as the suite switches them).
        say: Prints one note line (default: the console).

    Returns:
        The stop lines (empty: the run can go on).
    """
    console = Console(stderr=True)
    note = say or (lambda line: console.print(printable(line), soft_wrap=True, markup=False))
    pairs = plans_from_spec(spec)
    plans = [plan for _, plan in pairs]
    for plan in plans:
        for model in [*plan.models, *plan.roles.values()]:
            if endpoints.is_network(model.model):
                compatible.plain_chat_shape(model.model, model.base_url)
    stops = check_prerequisites(plans)
    if not stops:
        stops = check_endpoints(plans)
    if not stops:
        from docket.probe import check_tool_calls

        stops = check_tool_calls(plans)
    if not stops:
        stops = fit_image_tasks(plans, note)
    for task, plan in pairs:
        if plan.task_args != (dict(task.args) if isinstance(task.args, dict) else {}):
            task.args = dict(plan.task_args)
    return stops


def _role_model(model: Any) -> Model | None:
    """The Inspect model of a role binding, built as Flow builds it (memoized: the same one)."""
    if isinstance(model, Model):
        return model
    spec = _model_spec(model)
    if spec is None:
        return None
    base_url = model.base_url if isinstance(model, FlowModel) else None
    config = model.config if isinstance(model, FlowModel) else None
    return get_model(
        spec.model,
        config=config if isinstance(config, GenerateConfig) else GenerateConfig(),
        base_url=base_url if isinstance(base_url, str) else None,
        **spec.args,
    )


def roles_at_build(task: str, roles: dict[str, Any]) -> Callable[..., Task]:
    """A `FlowTask.factory`: the registered task built with its model roles bound.

    `eval_set` binds a task's roles before it builds the task; Flow binds them after (with
    `task_with`), so a docket task that checks or reads its roles when built would see none.

    Args:
        task: The registered task name.
        roles: The task's `model_roles` (FlowModel, name or Model, or a list of them).

    Returns:
        A function of the task's arguments that builds it with `roles` bound (a plain function:
        Flow writes it into the run's config by file and name).
    """

    def build_with_roles(**args: Any) -> Task:
        bound: dict[str, Model | list[Model]] = {}
        for role, value in roles.items():
            if isinstance(value, list):
                bound[role] = [m for m in (_role_model(v) for v in value) if m is not None]
            elif (model := _role_model(value)) is not None:
                bound[role] = model
        previous = model_roles()
        init_model_roles(bound)
        try:
            return task_create(task, **args)
        finally:
            init_model_roles(previous)

    return build_with_roles


def bind_roles_at_build(spec: FlowSpec) -> int:
    """Give every task of `spec` that has model roles the `roles_at_build` factory.

    Args:
        spec: A loaded Flow spec (changed in place).

    Returns:
        How many tasks got it.
    """
    changed = 0
    for task in spec.tasks or []:
        if not isinstance(task, FlowTask) or not isinstance(task.name, str):
            continue
        if task.factory or not isinstance(task.model_roles, dict) or not task.model_roles:
            continue
        task.factory = roles_at_build(task.name, dict(task.model_roles))
        changed += 1
    return changed


@after_load
def docket_flow(spec: FlowSpec) -> None:
    """Flow's `after_load` hook of a docket spec: roles at build, `FlowSettle`, the preflight.

    Args:
        spec: The loaded spec (its role-bound tasks get `roles_at_build`; image tasks may get
            their text arguments).

    Raises:
        PreflightError: After printing each stop line (`flow run` exits 1, nothing ran).
    """
    bind_roles_at_build(spec)
    ACTIVE[:] = [spec]
    if not _running():
        return
    stops = preflight(spec)
    if stops:
        console = Console(stderr=True)
        for line in stops:
            console.print(f"docket: {printable(line)}", soft_wrap=True, markup=False)
        console.print("docket: nothing ran", soft_wrap=True, markup=False)
        raise PreflightError(stops)


def _stage_of(spec: FlowSpec | None, task: str, model: str, args: dict[str, Any]) -> str:
    for flow_task in (spec.tasks or []) if spec is not None else []:
        if not isinstance(flow_task, FlowTask) or flow_task.name != task:
            continue
        found = _model_spec(flow_task.model)
        if found is not None and found.model == model and found.args == args:
            return str(_docket_metadata(flow_task).get("stage", "flow"))
    return "flow"


def settle_log_dir(log_dir: str, spec: FlowSpec | None = None) -> list[str]:
    """Settle every log of a Flow run's log directory as `docket suite` settles its eval_sets.

    Args:
        log_dir: The eval set's log directory.
        spec: The spec that ran (names each log's stage; None: `flow`).

    Returns:
        One line per log with errored samples (`suite.Errored.line`).
    """
    lines: list[str] = []
    for info in list_eval_logs(log_dir, recursive=False):
        header = read_eval_log(info, header_only=True)
        task, model = header.eval.task, header.eval.model
        stage = _stage_of(spec, task, model, dict(header.eval.model_args or {}))
        budget = header.plan.config.max_tokens
        errored = settle_errors(info.name, task, stage, budget)
        if errored is not None:
            lines.append(errored.line)
    return lines


@hooks(name="flow_settle", description="docket on Inspect Flow: errored samples named, re-run")
class FlowSettle(Hooks):
    """Settles a docket Flow spec's logs when its eval set ends (enabled by the preflight)."""

    def enabled(self) -> bool:
        """Only in a process that loaded a docket Flow spec."""
        return bool(ACTIVE)

    async def on_eval_set_end(self, data: EvalSetEnd) -> None:
        """Mark unanswered samples errored and name each errored log, as the suite does."""
        console = Console(stderr=True)
        for line in settle_log_dir(data.log_dir, ACTIVE[0] if ACTIVE else None):
            console.print(f"docket: {printable(line)}", soft_wrap=True, markup=False)
