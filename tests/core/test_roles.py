"""Unbound model roles: one line at task construction inside an eval, and inside solvers."""

import pytest
from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from docket.core.roles import (
    RoleUnboundError,
    require_roles,
    role_model,
    unbound_message,
)


def test_message_names_role_binding_and_opt_in() -> None:
    line = unbound_message("anchor_audit", "judge", "self_audit")
    assert "'judge' model role is unbound" in line
    assert "--model-role judge=" in line
    assert "-T self_audit=true" in line
    assert "\n" not in line


def test_outside_an_eval_construction_defers() -> None:
    require_roles("t", ["judge"], allow_self=False, self_flag="self_judge")


@solver
def _use_role(allow_self: bool) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = role_model("t", "judge", allow_self=allow_self, self_flag="self_judge")
        state.output = ModelOutput.from_content(str(model), model.name)
        state.metadata["judge_model"] = model.name
        return state

    return solve


@scorer(metrics=[])
def _judge_name() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=0, answer=state.metadata.get("judge_model"))

    return score


@task
def _roles_task(allow_self: bool = False) -> Task:
    require_roles("roles_task", ["judge"], allow_self=allow_self, self_flag="self_judge")
    return Task(dataset=[Sample(input="x")], solver=_use_role(allow_self), scorer=_judge_name())


def test_unbound_role_stops_the_eval_at_construction() -> None:
    with pytest.raises(RoleUnboundError, match="'judge' model role is unbound"):
        eval(_roles_task, model="docket/scripted", model_args={"policy": "refuse"}, display="none")


def test_bound_role_is_used_and_self_play_is_opt_in(tmp_path: object) -> None:
    bound = eval(
        _roles_task,
        model="docket/scripted",
        model_args={"policy": "refuse"},
        model_roles={"judge": get_model("docket/scripted", policy="comply")},
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert bound.status == "success"
    own = eval(
        _roles_task(allow_self=True),
        model="docket/scripted",
        model_args={"policy": "refuse"},
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert own.status == "success"
    assert own.samples is not None and own.samples[0].scores is not None
    assert next(iter(own.samples[0].scores.values())).answer == "scripted"


def test_prebuilt_task_fails_its_samples_with_the_line(tmp_path: object) -> None:
    log = eval(
        _roles_task(),
        model="docket/scripted",
        model_args={"policy": "refuse"},
        display="none",
        log_dir=str(tmp_path),
    )[0]
    assert log.status == "error"
    assert log.error is not None and "'judge' model role is unbound" in log.error.message
