"""`docket suite PRESET`: every benchmark on the preset's models, roles bound, then the report.

A preset (`benchmarks/presets/*.yaml`, or any file of the same shape) names the tasks, the model
roles, and stages of models; each stage runs one Inspect `eval_set` per task into
`LOG_DIR/<task>/<stage>` (so a re-run resumes only what is missing, errored samples included),
and the leaderboard is built from LOG_DIR at the end. Role models get the stage's generation
settings (`max_tokens`, ...) unless the preset sets a role's own `config`. Before anything runs,
each network model is called once (`docket.endpoints`), and each image task's readers are asked
about a probe image: a text-only model runs the task's `image_tasks` text arguments or stops the
suite with one line. After each eval_set, a sample whose model never answered is written back as
errored (`docket.core.errored`), so no metric counts it and the next run re-runs it.

LOG_DIR may be an S3 store (`s3://bucket/prefix`, `docket.core.logstore`): the same layout, the
same resume, checked once before anything runs. `--shard I/N` runs a deterministic 1/N of the
plan's units (task x model x stage, balanced by expected cost: `unit_owners`), so N processes
on one machine or N machines writing to one store produce the log set one process would; a
killed shard re-run resumes its own units. `--executor ray` runs the same units as Ray tasks on
a cluster (`docket.ray_executor`).

Each task gets the roles its `listing.yaml` names (for `roles: scripted`,
the scripted policies of its listing's `suite: roles:`); a role a task needs that the preset
leaves unbound stops the suite before anything runs. A listing's `suite:` block also gives the
task's reference policies (`reference_policies: true` stages) and its `-T` arguments by preset.
"""

from __future__ import annotations

import inspect as pyinspect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from inspect_ai import eval_set
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalError, EvalLog, EvalSample, read_eval_log, write_eval_log
from inspect_ai.model import GenerateConfig, Model, get_model
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from rich.console import Console

from docket import bindings, compatible, endpoints, limits
from docket.agents.scripted.policy import load_policies
from docket.benchmarks.presets import listed_tasks, preset_path
from docket.core import logstore
from docket.core.errored import UNANSWERED_PREFIX, last_model_error, unanswered_reason
from docket.core.superseded import remove_superseded
from docket.core.text import printable
from docket.reports.files import load_document
from docket.reports.health import HEALTH_KEY, health_record

SUITE_FORMAT = "docket-suite/1"


class PresetError(ValueError):
    """A preset that cannot be used (one line naming the file and field)."""


class ModelSpec(BaseModel):
    """A model as `provider/name` plus its `-M` args, base URL and own generation settings."""

    model_config = ConfigDict(extra="forbid")
    model: str
    args: dict[str, Any] = {}
    base_url: str | None = None
    #: GenerateConfig fields for this model only (e.g. a role's `max_tokens`); they win over the
    #: stage's settings.
    config: dict[str, Any] = {}

    @field_validator("model")
    @classmethod
    def _provider(cls, value: str) -> str:
        if "/" not in value or value.startswith("/") or value.endswith("/"):
            raise ValueError(f"model {value!r} must be provider/name")
        return value

    @field_validator("config")
    @classmethod
    def _config(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - set(GenerateConfig.model_fields))
        if unknown:
            raise ValueError(f"config: {unknown[0]!r} is not a GenerateConfig field")
        return value

    @property
    def label(self) -> str:
        """`provider/name k=v` as the leaderboard writes it."""
        return " ".join([self.model, *(f"{k}={v}" for k, v in sorted(self.args.items()))])


def _model_spec(value: Any) -> Any:
    return {"model": value} if isinstance(value, str) else value


class ImageTask(BaseModel):
    """A task that sends images unless run with `text_args`, and who reads them."""

    model_config = ConfigDict(extra="forbid")
    #: The `-T` arguments that make the task text-only (e.g. `{mode: layout_text}`).
    text_args: dict[str, Any]
    #: Who is given the images: `model` (the models under test) and/or role names.
    readers: list[str] = ["model"]


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
    #: `scripted` (each task's listing policies), `under_test` (every role the model under test,
    #: for `--model` runs on one server) or a model per role.
    roles: Literal["scripted", "under_test"] | dict[str, ModelSpec] = {}
    budget_minutes: float | None = None
    #: The drop `docket regress` should be able to rule out on these runs, and its level: a
    #: `--limit` too small to detect it is warned about before the suite runs.
    tolerance: float = 0.05
    alpha: float = 0.05
    eval_args: dict[str, Any] = {}
    #: `-T` arguments per task, the same for every model of every stage (rows stay comparable).
    task_args: dict[str, dict[str, Any]] = {}
    #: Tasks that send images: a network reader that cannot read them gets the text arguments
    #: (or, when the command line forced image input, the suite stops with one line).
    image_tasks: dict[str, ImageTask] = {}
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
    data = load_document(path, PresetError, "preset (shipped: offline, api, local, local-server)")
    try:
        preset = Preset.model_validate(data)
    except ValidationError as ex:
        # a union field (roles: scripted | mapping) fails on each branch: name the mapping's
        errors = ex.errors()
        first = next((e for e in errors if "literal[" not in str(e["loc"])), errors[0])
        where = ".".join(str(p) for p in first["loc"] if not str(p).startswith("dict[")) or (
            "preset"
        )
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
    #: A local folder, or an S3 location (`s3://bucket/prefix/<task>/<stage>`).
    log_dir: Path | str
    eval_args: dict[str, Any] = field(default_factory=dict)
    task_args: dict[str, Any] = field(default_factory=dict)
    #: How the task can run without images, when it sends them (the preset's `image_tasks`).
    image_task: ImageTask | None = None
    #: `-T` keys given on the command line: never switched to text input behind the user's back.
    forced_task_args: set[str] = field(default_factory=set)
    #: Where each role's binding came from (`--role`, `preset api`, ...), for --dry-run and the
    #: probe's line.
    role_sources: dict[str, str] = field(default_factory=dict)
    #: Where each eval argument came from (`preset`, `stage NAME`, `--time-limit`, ...).
    arg_sources: dict[str, str] = field(default_factory=dict)
    #: Other shards run the stage's other models in the same folder (`--shard`): Inspect's
    #: eval_set then leaves their logs alone (`log_dir_allow_dirty`).
    shared_dir: bool = False


@dataclass
class Overrides:
    """What the command line changes: per task (its name) or for every task (key "")."""

    #: `-M key=value` for the models under test.
    model_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: `-T key=value`, after the preset's and the listing's.
    task_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: `--max-tokens`, `--max-connections`, `--attempt-timeout`, `--time-limit` (eval_set
    #: arguments; they win over the preset's and its stage's).
    eval_args: dict[str, Any] = field(default_factory=dict)
    #: `--base-url`: the models under test and the roles given with `--role`.
    base_url: str | None = None

    @staticmethod
    def pick(by_task: dict[str, dict[str, Any]], task: str) -> dict[str, Any]:
        """The entries for every task, then `task`'s own (they win)."""
        return {**by_task.get("", {}), **by_task.get(task, {})}


def parse_assignments(flag: str, values: list[str] | None) -> dict[str, dict[str, Any]]:
    """`key=value` (every task) or `TASK:key=value` (one task) flags, values parsed as YAML.

    Args:
        flag: The flag's name for the error line (`-M`, `-T`).
        values: The flag's values, in order (a later one wins).

    Returns:
        The arguments by task name (`docket/<task>`), "" for every task; `PresetError` (one line)
        for a value that is not `key=value` or names an unknown task.
    """
    from docket.core.inspect_private import parse_cli_args

    found: dict[str, dict[str, Any]] = {}
    for value in values or []:
        left, sep, right = value.partition("=")
        task, colon, key = left.rpartition(":") if ":" in left else ("", "", left)
        if not (sep and key):
            raise PresetError(f"{flag} {value!r}: expected key=value or TASK:key=value")
        if colon:
            task = task if "/" in task else f"docket/{task}"
            if task not in registered_tasks():
                raise PresetError(f"{flag} {value!r}: unknown task {task!r}")
        found.setdefault(task, {}).update(parse_cli_args([f"{key}={right}"]))
    return found


def known_roles() -> set[str]:
    """Every role name a listed task requires or uses when bound."""
    return {
        str(role)
        for listed in listed_tasks().values()
        for role in [*(listed.get("roles") or []), *(listed.get("optional_roles") or [])]
    }


def _off_openai(spec: ModelSpec) -> bool:
    """Whether `spec` is an `openai/` model on a server other than OpenAI's."""
    return compatible.off_openai(spec.model, spec.base_url or spec.args.get("base_url"))


def _chat_completions(spec: ModelSpec) -> ModelSpec:
    """An `openai/` model on another server uses the chat-completions API (most compatible
    servers have no Responses API) unless `-M responses_api=...` says otherwise."""
    if "responses_api" in spec.args or not _off_openai(spec):
        return spec
    return spec.model_copy(update={"args": {**spec.args, "responses_api": False}})


def plain_chat_shape(spec: ModelSpec) -> None:
    """Make Inspect shape an off-OpenAI `openai/` model's requests as a plain chat model's
    (`docket.compatible.plain_chat_shape`).

    Args:
        spec: A model of the suite (under test or a role).
    """
    compatible.plain_chat_shape(spec.model, spec.base_url or spec.args.get("base_url"))


def _under_test(spec: ModelSpec, args: dict[str, Any], base_url: str | None) -> ModelSpec:
    """A model under test with the command line's `-M` args and (network models) `--base-url`."""
    update: dict[str, Any] = {"args": {**spec.args, **args}}
    if base_url and endpoints.is_network(spec.model):
        update["base_url"] = base_url
    return _chat_completions(spec.model_copy(update=update))


def _cli_roles(roles: dict[str, str], base_url: str | None) -> dict[str, ModelSpec]:
    """The `--role` bindings (`--base-url` for network ones); an unknown role is one line."""
    unknown = sorted(set(roles) - known_roles())
    if unknown:
        raise PresetError(
            f"--role {unknown[0]}: no docket task has a {unknown[0]!r} role "
            f"(roles: {', '.join(sorted(known_roles()))})"
        )
    return {
        k: ModelSpec(model=v, base_url=base_url if endpoints.is_network(v) else None)
        for k, v in roles.items()
    }


def _with_flags(preset: Preset, flags: dict[str, ModelSpec]) -> Preset:
    """`preset` with the `--role` bindings over its own (a `scripted` preset keeps only them)."""
    if not flags or preset.roles == "under_test":
        return preset
    current = {} if preset.roles == "scripted" else dict(preset.roles)
    return preset.model_copy(update={"roles": {**current, **flags}})


def _task_bindings(
    preset: Preset,
    task: str,
    flags: dict[str, ModelSpec],
    under_test: list[ModelSpec],
    args: dict[str, Any],
) -> dict[str, bindings.RoleBinding]:
    """`task`'s roles with their sources (`docket.bindings`); `PresetError` for a required role
    left unbound."""
    if preset.roles == "scripted":
        found = _scripted_roles(task)
        return {r: bindings.RoleBinding(m, bindings.FROM_LISTING) for r, m in found.items()}
    source = f"preset {preset.name}"
    if preset.roles == "under_test":
        if not under_test:
            raise PresetError(f"preset {preset.name}: no model under test; give --model")
        bound = {**{r: under_test[0] for r in known_roles()}, **flags}
        source = f"{bindings.FROM_UNDER_TEST}, preset {preset.name}"
    else:
        task_roles(preset, task)  # a required role left unbound is one line
        bound = dict(preset.roles)
    return bindings.bind_roles(task, bound, set(flags), source, under_test, args)


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
    if preset.roles == "under_test":
        return {}
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
    log_dir: Path | str,
    tasks: list[str] | None = None,
    models: list[str] | None = None,
    roles: dict[str, str] | None = None,
    limit: int | None = None,
    stages: list[str] | None = None,
    overrides: Overrides | None = None,
) -> list[TaskPlan]:
    """Every (stage, task) eval_set the suite will run, checked before anything runs.

    Args:
        preset: The suite preset.
        log_dir: The suite's log directory, a local folder or an S3 location (one folder per
            task and stage below it).
        tasks: Only these tasks (default: the preset's).
        models: Run these models instead of the preset's stages, with the first chosen stage's
            eval arguments (its `limit` included).
        roles: `--role ROLE=provider/model` bindings (an unknown role name is a `PresetError`).
        limit: Samples per task (overrides the preset's).
        stages: Only these stages of the preset.
        overrides: The other command-line settings (`-M`, `-T`, `--max-tokens`, ...).

    Returns:
        The plans, in run order; `PresetError` (one line) for anything that cannot run.
    """
    cli = overrides or Overrides()
    # a bare name (`scsuff`) is docket's task, as in `-T scsuff:key=value`
    named = [t if "/" in t else f"docket/{t}" for t in tasks or []]
    chosen = named or (registered_tasks() if preset.tasks == "all" else list(preset.tasks))
    unknown = [t for t in chosen if t not in registered_tasks()]
    if unknown:
        raise PresetError(
            f"unknown task {unknown[0]!r}; registered: {', '.join(registered_tasks())}"
        )
    stray = [t for t in [*preset.task_args, *preset.image_tasks] if t not in registered_tasks()]
    if stray:
        raise PresetError(f"preset {preset.name}: task_args names unknown task {stray[0]!r}")
    flags = _cli_roles(roles, cli.base_url) if roles else {}
    preset = _with_flags(preset, flags)
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
        first = chosen_stages[0] if chosen_stages else Stage(name="models", models=[])
        specs = [ModelSpec(model=m, base_url=cli.base_url) for m in models]
        chosen_stages = [
            Stage(
                name="models",
                models=specs,
                skip_tasks=first.skip_tasks,
                eval_args=first.eval_args,
            )
        ]
    plans: list[TaskPlan] = []
    for stage in chosen_stages:
        if not stage.models:
            raise PresetError(
                f"preset {preset.name}: stage {stage.name} names no model; give --model "
                "provider/name (and --base-url URL for your own server)"
            )
        for task in [t for t in chosen if t not in stage.skip_tasks]:
            extra = _reference_models(task) if stage.reference_policies else []
            layers = [(f"preset {preset.name}", preset.eval_args)]
            layers += [(f"stage {stage.name}", stage.eval_args), ("", cli.eval_args)]
            if limit is not None:
                layers.append(("--limit", {"limit": limit}))
            args, sources = limits.merge_eval_args(layers)
            model_args = Overrides.pick(cli.model_args, task)
            under_test = [_under_test(m, model_args, cli.base_url) for m in stage.models]
            forced = Overrides.pick(cli.task_args, task)
            merged_task_args = {**task_args(preset, task), **forced}
            bound = _task_bindings(preset, task, flags, under_test, merged_task_args)
            plans.append(
                TaskPlan(
                    task=task,
                    stage=stage.name,
                    models=[*under_test, *extra],
                    roles={r: _chat_completions(b.model) for r, b in bound.items()},
                    log_dir=logstore.join(log_dir, task.replace("/", "_"), stage.name),
                    eval_args=args,
                    task_args=merged_task_args,
                    image_task=preset.image_tasks.get(task),
                    forced_task_args=set(forced),
                    role_sources={r: b.source for r, b in bound.items()},
                    arg_sources=sources,
                )
            )
    return plans


#: Relative cost of one sample by kind of model: scripted and mock policies answer in-process
#: at once, a network model waits on its server, local weights decode on this machine.
SCRIPTED_COST = 1.0
NETWORK_COST = 10.0
LOCAL_WEIGHTS_COST = 50.0
#: Providers whose models answer in-process without weights (`docket/scripted`, `mockllm`).
SCRIPTED_MODELS = ("docket/scripted", "mockllm/")
#: Samples assumed for a task whose listing states no `dataset_samples` and no --limit.
UNKNOWN_SAMPLES = 100


@dataclass(frozen=True)
class Shard:
    """`--shard I/N`: the I-th (1-based) of N disjoint parts of the plan's units."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/N` as a Shard; `PresetError` (one line) for anything else.

        Args:
            text: The flag's value, e.g. `2/3`.

        Returns:
            The shard.
        """
        found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if found is None:
            raise PresetError(f"--shard {text!r}: expected I/N, e.g. 2/3")
        index, count = int(found.group(1)), int(found.group(2))
        if count < 1 or not 1 <= index <= count:
            raise PresetError(f"--shard {text}: I must be between 1 and N")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def expected_samples(item: TaskPlan, listed: dict[str, dict[str, Any]] | None = None) -> int:
    """Samples one model of `item` runs: its `--limit` (or range) within the listing's
    `dataset_samples`, `UNKNOWN_SAMPLES` when neither is known, times its epochs.

    Args:
        item: One planned eval_set.
        listed: `listed_tasks()`, when the caller has read it already.

    Returns:
        The expected sample epochs (at least 1).
    """
    found = listed if listed is not None else listed_tasks()
    size = (found.get(item.task) or {}).get("dataset_samples")
    size = size if isinstance(size, int) and size > 0 else None
    limit = item.eval_args.get("limit")
    ids = item.eval_args.get("sample_id")
    if isinstance(ids, list):
        count = len(ids)
    elif ids is not None:
        count = 1
    elif isinstance(limit, int):
        count = min(limit, size) if size else limit
    elif isinstance(limit, list | tuple) and len(limit) == 2:
        count = max(0, int(limit[1]) - int(limit[0]))
    else:
        count = size or UNKNOWN_SAMPLES
    epochs = item.eval_args.get("epochs", 1)
    epochs = epochs if isinstance(epochs, int) else int(getattr(epochs, "epochs", 1))
    return max(1, count * max(1, epochs))


def model_cost(spec: ModelSpec) -> float:
    """The relative cost of one sample on `spec` (`SCRIPTED_COST`, `NETWORK_COST` or
    `LOCAL_WEIGHTS_COST`)."""
    if spec.model.startswith(SCRIPTED_MODELS):
        return SCRIPTED_COST
    return NETWORK_COST if endpoints.is_network(spec.model) else LOCAL_WEIGHTS_COST


def unit_owners(plans: list[TaskPlan], count: int) -> dict[tuple[int, int], int]:
    """Which shard (0-based) runs each unit: (plan index, model index) of task x model x stage.

    Units are balanced by expected cost (`expected_samples` x `model_cost`): the costliest
    first, each to the shard with the least cost so far (ties: the lower shard, then plan and
    model order). A pure function of the plans, so N processes given the same preset and flags
    partition them alike, each unit to exactly one shard.

    Args:
        plans: The suite's plans, unsharded.
        count: N.

    Returns:
        The shard of every unit.
    """
    costs = unit_costs(plans)
    # beyond one shard per unit the greedy gives unit k to shard k: more shards change nothing
    loads = [0.0] * max(1, min(count, len(costs)))
    owners: dict[tuple[int, int], int] = {}
    for key in sorted(costs, key=lambda k: (-costs[k], k)):
        chosen = min(range(len(loads)), key=lambda k: (loads[k], k))
        owners[key] = chosen
        loads[chosen] += costs[key]
    return owners


def unit_costs(plans: list[TaskPlan]) -> dict[tuple[int, int], float]:
    """The expected cost of each unit, (plan index, model index): `expected_samples` x
    `model_cost`.

    Args:
        plans: The suite's plans, unsharded.

    Returns:
        Every unit's cost.
    """
    listed = listed_tasks()
    return {
        (i, j): expected_samples(p, listed) * model_cost(m)
        for i, p in enumerate(plans)
        for j, m in enumerate(p.models)
    }


def shard_plans(plans: list[TaskPlan], shard: Shard) -> list[TaskPlan]:
    """The plans of one shard: each (task, stage) with only the models this shard owns
    (`unit_owners`), dropped when it owns none, in the plans' order.

    Args:
        plans: The suite's plans, unsharded.
        shard: Which part to keep.

    Returns:
        The shard's plans; a plan split between shards is marked `shared_dir`.
    """
    owners = unit_owners(plans, shard.count)
    kept = []
    for i, item in enumerate(plans):
        mine = [m for j, m in enumerate(item.models) if owners[(i, j)] == shard.index - 1]
        if mine:
            kept.append(replace(item, models=mine, shared_dir=len(mine) < len(item.models)))
    return kept


def shard_line(plans: list[TaskPlan], shard: Shard) -> str:
    """`shard 2/3: 4 of 10 units (task x model x stage), 34 % of the expected cost`.

    Args:
        plans: The suite's plans, unsharded.
        shard: This process's part.

    Returns:
        The line `--shard` prints before running.
    """
    owners = unit_owners(plans, shard.count)
    costs = unit_costs(plans)
    mine = [key for key, owner in owners.items() if owner == shard.index - 1]
    share = sum(costs[k] for k in mine) / (sum(costs.values()) or 1.0)
    return (
        f"shard {shard}: {len(mine)} of {len(owners)} units (task x model x stage), "
        f"{share:.0%} of the expected cost"
    )


def generate_config(eval_args: dict[str, Any]) -> GenerateConfig:
    """The generation settings among a stage's eval arguments (`max_tokens`, `timeout`, ...).

    Args:
        eval_args: The merged eval_set arguments of a plan.

    Returns:
        A GenerateConfig of the arguments that are its fields.
    """
    fields = GenerateConfig.model_fields
    return GenerateConfig(**{k: v for k, v in eval_args.items() if k in fields})


def _model(spec: ModelSpec, stage: GenerateConfig | None = None) -> Model:
    """The Inspect model of `spec`: roles get the stage's settings under their own `config`."""
    own = GenerateConfig(**spec.config)
    config = stage.merge(own) if stage is not None else own
    plain_chat_shape(spec)
    return get_model(spec.model, config=config, base_url=spec.base_url, **spec.args)


#: Called with each model `run_plan` builds and its spec (the Ray executor's endpoint cap).
ModelHook = Callable[[ModelSpec, Model], None]


def _hooked(spec: ModelSpec, model: Model, hook: ModelHook | None) -> Model:
    if hook is not None:
        hook(spec, model)
    return model


def role_models(item: TaskPlan, hook: ModelHook | None = None) -> dict[str, Model]:
    """The role models of `item`, each with the stage's GenerateConfig (its own `config` wins).

    Args:
        item: One planned eval_set.
        hook: Called with each model and its spec.

    Returns:
        Models by role name.
    """
    stage = generate_config(item.eval_args)
    return {role: _hooked(spec, _model(spec, stage), hook) for role, spec in item.roles.items()}


@dataclass
class Errored:
    """The errored samples of one log, for the suite's closing lines."""

    task: str
    stage: str
    model: str
    ids: list[str]
    total: int
    reason: str

    @property
    def line(self) -> str:
        """`task / stage / model: N of M samples errored (ids ...): first reason`."""
        shown = ", ".join(self.ids[:5]) + (", ..." if len(self.ids) > 5 else "")
        return (
            f"{self.task} / {self.stage} / {self.model}: {len(self.ids)} of {self.total} "
            f"samples errored (ids {shown}): {self.reason}; the next run re-runs them"
        )


#: Eval metadata key of the `max_tokens` the calls carried, when a task forced its own.
BUDGET_KEY = "docket_max_tokens"


def call_budgets(samples: list[EvalSample]) -> dict[str, list[int | None]]:
    """The distinct `max_tokens` the model calls carried, by caller (`model` or the role).

    Args:
        samples: A log's samples, read with their events.

    Returns:
        Sorted values per caller (None: unbounded).
    """
    found: dict[str, set[int | None]] = {}
    for sample in samples:
        for event in sample.events:
            if isinstance(event, ModelEvent):
                found.setdefault(event.role or "model", set()).add(event.config.max_tokens)
    return {k: sorted(v, key=lambda x: -1 if x is None else x) for k, v in sorted(found.items())}


def settle_errors(
    location: str, task: str, stage: str, max_tokens: int | None = None
) -> Errored | None:
    """Mark the log's unanswered samples errored, name every errored sample, note budgets and
    store the log's health.

    A sample whose model never answered (`unanswered_reason`) gets that reason as its `error`,
    and the log's status becomes `error`, so no metric counts the sample and Inspect's eval-set
    resume re-runs it on the next suite run (clean samples are reused). When the calls carried
    a `max_tokens` other than the run's (a task that forces its own budget), the log's eval
    metadata states it under `BUDGET_KEY`: `{"run": 256, "calls": {"model": [512]}}`. The
    log's health record (`docket.reports.health.health_record`, under `HEALTH_KEY`) lets a
    report read its header and summaries instead of every sample. A log in an S3 store is
    downloaded, settled locally and written back in one PUT.

    Args:
        location: The log file (a local path or a store URL).
        task: The task, for the line.
        stage: The stage, for the line.
        max_tokens: The run's `max_tokens` (None: not set).

    Returns:
        The errored samples, or None when every sample was scored.
    """
    with logstore.local_copy(location) as path:
        log = read_eval_log(str(path))
        samples = log.samples or []
        marked = 0
        for sample in samples:
            reason = unanswered_reason(sample)
            if reason is not None:
                sample.error = EvalError(message=reason, traceback="", traceback_ansi="")
                marked += 1
        errored = [s for s in samples if s.error is not None]
        budgets = call_budgets(samples)
        stated = {"run": max_tokens, "calls": budgets}
        metadata = dict(log.eval.metadata or {})
        forced = any(values != [max_tokens] for values in budgets.values())
        if forced:
            metadata[BUDGET_KEY] = stated
        # an errored sample in a `success` log (a preset's `fail_on_error: false`) would never
        # be re-run: eval-set resume retries only logs that did not succeed
        reopen = bool(errored) and log.status == "success"
        if marked or reopen:
            log.status = "error"
            log.error = EvalError(
                message=f"{len(errored)} samples errored (docket suite: {marked} unanswered)",
                traceback="",
                traceback_ansi="",
            )
        metadata[HEALTH_KEY] = health_record(log.eval.eval_id, samples)
        changed = metadata != (log.eval.metadata or {})
        log.eval.metadata = metadata
        if marked or reopen or changed:
            write_eval_log(log, str(path), header_only=not (marked or reopen))
            if logstore.is_remote(location):
                logstore.upload(path, location)
    if not errored:
        return None
    return Errored(
        task=task,
        stage=stage,
        model=log.eval.model,
        ids=[str(s.id) for s in errored],
        total=len(samples),
        reason=error_reason(errored[0]),
    )


def error_reason(sample: EvalSample) -> str:
    """One line for an errored sample: docket's reason, else the provider's, else Inspect's.

    Args:
        sample: A sample that carries an `error`.

    Returns:
        The reason (Inspect's `RetryError(<Future ...>)` replaced by the failed call's error).
    """
    message = (sample.error.message if sample.error else "").strip()
    if message.startswith(UNANSWERED_PREFIX):
        return message.splitlines()[0]
    provider = last_model_error(sample)
    if provider and (not message or message.startswith("RetryError(")):
        return provider
    return message.splitlines()[0] if message else "error"


def _settle(item: TaskPlan, logs: list[EvalLog]) -> list[Errored]:
    budget = item.eval_args.get("max_tokens")
    found: list[Errored] = []
    for log in logs:
        if not log.location:
            continue
        try:
            settled = settle_errors(log.location, item.task, item.stage, budget)
        except FileNotFoundError:  # a store listed it, then a later attempt's log replaced it
            Console(stderr=True).print(
                f"warning: {printable(log.location)}: gone before its errored samples were "
                "settled (replaced by a later attempt); the report reads the store as it is",
                markup=False,
                soft_wrap=True,
            )
            continue
        if settled is not None:
            found.append(settled)
    return found


def run_plan(
    plans: list[TaskPlan],
    budget_minutes: float | None,
    display: str = "plain",
    hook: ModelHook | None = None,
) -> tuple[bool, list[str]]:
    """Run every eval_set in order; (all succeeded with no errored sample, problem lines).

    Samples run to the end (`continue_on_fail`) and a task with errored samples ends as an
    `error` log (`fail_on_error`, unless the preset sets it), which Inspect retries
    (`retry_attempts`) and the next run resumes; each log's errored samples are named.

    Args:
        plans: The eval_sets, in order.
        budget_minutes: After this many minutes, the plans of later stages are skipped.
        display: Inspect's display.
        hook: Called with each model built (under test and roles) and its spec.

    Returns:
        Whether every eval_set succeeded with no errored sample, and the problem lines.
    """
    console = Console()
    started = time.monotonic()
    ok, problems = True, []
    first_stage = plans[0].stage if plans else ""
    for item in plans:
        elapsed = (time.monotonic() - started) / 60
        if budget_minutes is not None and item.stage != first_stage and elapsed > budget_minutes:
            problems.append(f"{item.task} / {item.stage}: skipped, time budget spent")
            continue
        # docket sweeps the older logs itself, keeping the ones eval_set returns (superseded.py)
        args = {"fail_on_error": True, "continue_on_fail": True, **item.eval_args}
        sweep = args.pop("retry_cleanup", True) is not False
        args["retry_cleanup"] = False
        if item.shared_dir:  # the other shards' logs of this task and stage are not ours
            args["log_dir_allow_dirty"] = True
        try:
            success, logs = eval_set(
                tasks=item.task,
                task_args=item.task_args,
                model=[_hooked(m, _model(m), hook) for m in item.models],
                model_roles=role_models(item, hook) or None,
                log_dir=str(item.log_dir),
                display=display,  # type: ignore[arg-type]
                **args,
            )
        except Exception as ex:  # noqa: BLE001 - the suite goes on with the other tasks
            line = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
            problems.append(printable(f"{item.task} / {item.stage}: {type(ex).__name__}: {line}"))
            console.print(f"[red]{problems[-1]}[/red]", soft_wrap=True, markup=False)
            ok = False
            continue
        if sweep:
            remove_superseded(str(item.log_dir), logs)
        errored = _settle(item, logs)
        problems.extend(e.line for e in errored)
        ok &= bool(success) and not errored
    return ok, problems


def _probe_model(spec: ModelSpec) -> Model:
    """A fresh (not memoized) model for a probe: its client lives and dies in the probe's loop."""
    args = endpoints.probe_args(spec.model, spec.args)
    plain_chat_shape(spec)
    return get_model(spec.model, base_url=spec.base_url, memoize=False, **args)


def _identity(spec: ModelSpec) -> str:
    return f"{spec.label} @ {spec.base_url or ''}"


def _value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def task_sandbox(item: TaskPlan) -> str | None:
    """The sandbox kind `item`'s task runs in (its `-T sandbox=`), None for a task with none.

    Args:
        item: One plan.

    Returns:
        `bwrap`, `docker`, `k8s` (or what the user passed), None when the task takes no sandbox.
    """
    from inspect_ai._util.registry import registry_lookup

    found = registry_lookup("task", item.task)
    if not callable(found):
        return None
    try:
        parameters = pyinspect.signature(found).parameters
    except (ValueError, TypeError):
        return None
    if "sandbox" not in parameters:
        return None
    default = parameters["sandbox"].default
    return str(item.task_args.get("sandbox", default))


def check_prerequisites(plans: list[TaskPlan]) -> list[str]:
    """`docket doctor`'s blocking lines for the plans' sandboxes and models (empty: can run).

    Args:
        plans: The suite's plans.

    Returns:
        One line per problem that would stop a task mid-run, with its fix.
    """
    from docket import doctor

    models = list(
        dict.fromkeys(spec.model for item in plans for spec in [*item.models, *item.roles.values()])
    )
    kinds: list[str | None] = list(
        dict.fromkeys(k for item in plans if (k := task_sandbox(item)) is not None)
    )
    lines: list[str] = []
    for kind in kinds or [None]:
        if kind is not None and kind not in doctor.SANDBOXES:
            continue  # the task itself says the kind is unknown, in one line
        if kind is None:  # no task takes a sandbox: only the models are checked
            found = [f.line() for f in doctor.findings([], models) if f.stops("", models)]
        else:
            found = doctor.check_run(kind, models)
        lines.extend(found)
    return list(dict.fromkeys(lines))


def check_endpoints(plans: list[TaskPlan]) -> list[str]:
    """Call every network model of the plans (under test and roles) once; the problem lines.

    Args:
        plans: The suite's plans.

    Returns:
        One line per endpoint that failed (`docket.endpoints.error_line`), empty when all
        answered.
    """
    seen: dict[str, str | None] = {}
    users: dict[str, dict[str, str]] = {}  # identity -> role -> its source (first seen)
    for item in plans:
        for spec in item.models:
            users.setdefault(_identity(spec), {}).setdefault("", "")
        for role, spec in item.roles.items():
            users.setdefault(_identity(spec), {}).setdefault(role, item.role_sources.get(role, ""))
        for spec in [*item.models, *item.roles.values()]:
            key = _identity(spec)
            if endpoints.is_network(spec.model) and key not in seen:
                seen[key] = endpoints.endpoint_problem(_probe_model(spec))
    return list(dict.fromkeys(_with_roles(line, users[key]) for key, line in seen.items() if line))


def _with_roles(line: str, users: dict[str, str]) -> str:
    """A probe's failure line, naming the roles that model plays and the flag that binds each."""
    roles = {r: s for r, s in users.items() if r}
    if not roles:
        return line
    named = ", ".join(f"{r} (from {s})" if s else r for r, s in roles.items())
    fixes = " or ".join(bindings.role_flag(r) for r in roles)
    return f"{line}; used as role {named}: bind it with {fixes}"


def _readers(item: TaskPlan, image: ImageTask) -> list[ModelSpec]:
    found = []
    for reader in image.readers:
        if reader == "model":
            found.extend(item.models)
        elif reader in item.roles:
            found.append(item.roles[reader])
    return [spec for spec in found if endpoints.is_network(spec.model)]


def fit_image_tasks(plans: list[TaskPlan], say: Callable[[str], None]) -> list[str]:
    """Give image tasks their text arguments where a network reader cannot read images.

    Each reader (`ImageTask.readers`) is asked about the probe image once. A text-only one
    switches its task to the preset's `text_args` (said with `say`), unless the command line
    set one of those `-T` keys: then the suite stops with docket/local's line.

    Args:
        plans: The suite's plans (their `task_args` are updated in place).
        say: Prints one note line.

    Returns:
        The stop lines (`TASK: model M cannot read images; use -T k=v`), empty to go on.
    """
    reads: dict[str, bool | str] = {}
    stops: list[str] = []
    for item in plans:
        image = item.image_task
        if image is None or all(item.task_args.get(k) == v for k, v in image.text_args.items()):
            continue
        blind = []
        for spec in _readers(item, image):
            key = _identity(spec)
            if key not in reads:
                try:
                    reads[key] = endpoints.reads_images(_probe_model(spec))
                except Exception as error:  # noqa: BLE001 - the endpoint's one line
                    model = _probe_model(spec)
                    reads[key] = endpoints.error_line(error, endpoints.where(model), spec.model)
            if isinstance(reads[key], str):
                stops.append(str(reads[key]))
            elif not reads[key]:
                blind.append(spec)
        if not blind:
            continue
        advice = "use -T " + " ".join(f"{k}={_value(v)}" for k, v in image.text_args.items())
        line = f"model {blind[0].model} cannot read images; {advice}"
        if item.forced_task_args & set(image.text_args):
            stops.append(f"{item.task}: {line}")
            continue
        item.task_args.update(image.text_args)
        say(f"{item.task} / {item.stage}: {line}: running with it")
    return list(dict.fromkeys(stops))


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


def _shown(spec: ModelSpec) -> str:
    extra = [f"base_url={spec.base_url}"] if spec.base_url else []
    extra += [f"{k}={v}" for k, v in sorted(spec.config.items())]
    return " ".join([spec.label, *extra])


def describe(plans: list[TaskPlan]) -> list[str]:
    """Per eval_set (for --dry-run): one line, then its roles' sources and its time limits.

    Args:
        plans: The suite's plans.

    Returns:
        `STAGE: TASK on MODELS; roles ...; -T ...; {eval args} -> LOGDIR`, an indented
        `roles:` line (each role's model and where it came from, unused optional roles named)
        and an indented `time limits:` line (`docket.limits.limit_line`).
    """
    lines = []
    for p in plans:
        lines.append(
            f"{p.stage}: {p.task} on {', '.join(_shown(m) for m in p.models)}"
            + (
                f"; roles {', '.join(f'{r}={_shown(m)}' for r, m in p.roles.items())}"
                * bool(p.roles)
            )
            + (f"; -T {p.task_args}" if p.task_args else "")
            + (f"; {p.eval_args}" if p.eval_args else "")
            + f" -> {p.log_dir}"
        )
        lines.append(f"  {role_line(p)}")
        lines.append(f"  {limits.limit_line(p)}")
    return lines


def role_line(item: TaskPlan) -> str:
    """`roles: judge openai/x (--role); emulator unbound (used only with -T emulator=true)`.

    Args:
        item: One plan.

    Returns:
        Each bound role's model and source, then each listed role left unbound and why.
    """
    parts = [f"{r} {_shown(m)} ({item.role_sources.get(r, '?')})" for r, m in item.roles.items()]
    listed = listed_tasks().get(item.task) or {}
    for role in listed.get("optional_roles") or []:
        if role in item.roles:
            continue
        when = bindings.when_text(item.task, role)
        parts.append(f"{role} unbound (used only with {when})" if when else f"{role} unbound")
    return "roles: " + ("; ".join(parts) if parts else "none")
