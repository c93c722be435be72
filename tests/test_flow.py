"""Inspect Flow interop (`docket/flow.py`): a preset's plan as a Flow spec, docket's additions on
Flow's runner, and one preset run by `flow run` giving the logs `docket suite` gives.

Skipped with one line where inspect-flow (`pip install 'docket[flow]'`) is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextvars import copy_context
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.event import ModelEvent
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalPlan,
    EvalSample,
    EvalSpec,
    list_eval_logs,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import GenerateConfig, ModelOutput

from docket.cli import main
from docket.core.errored import UNANSWERED_PREFIX
from docket.reports.health import HEALTH_KEY
from docket.suite import BUDGET_KEY, PresetError, load_preset, plan, run_plan
from tests.fake_openai import closed_port

pytest.importorskip(
    "inspect_flow", reason="inspect-flow is not installed (pip install 'docket[flow]')"
)

from inspect_flow import FlowSpec, FlowTask  # noqa: E402
from inspect_flow.api import dump_spec, load_spec, load_spec_data  # noqa: E402

from docket import flow  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = "{{model: docket/scripted, args: {{policy: {}}}}}"


def _preset(
    tmp_path: Path, stages: str | None = None, eval_args: str = "{max_tokens: 256}"
) -> Path:
    """ANCHOR's audit roles (the auditor with its own max_tokens) and two scripted models."""
    models = f"[{SCRIPTED.format('comply')}, {SCRIPTED.format('refuse')}]"
    path = tmp_path / "p.yaml"
    path.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\n"
        "roles:\n"
        "  judge: {model: docket/scripted, args: {policy: judge}}\n"
        "  auditor: {model: docket/scripted, args: {policy: auditor}, config: {max_tokens: 40}}\n"
        f"eval_args: {eval_args}\n"
        f"stages: {stages or f'[{{name: s, models: {models}, eval_args: {{limit: 1}}}}]'}\n"
    )
    return path


@pytest.fixture(autouse=True)
def _inactive() -> Iterator[None]:
    """No test leaves the settle hook enabled for the tests after it."""
    yield
    flow.ACTIVE.clear()


def test_one_flow_task_per_model_with_its_roles_and_settings(tmp_path: Path) -> None:
    plans = plan(load_preset(str(_preset(tmp_path))), tmp_path / "logs", tasks=["anchor_audit"])
    spec = flow.flow_spec(plans, str(tmp_path / "logs"), "p")
    data = dump_spec(spec)
    assert [(t["name"], t["model"]["model_args"]) for t in data["tasks"]] == [
        ("docket/anchor_audit", {"policy": "comply"}),
        ("docket/anchor_audit", {"policy": "refuse"}),
    ]
    first = data["tasks"][0]
    # the stage's settings are the task's config (eval_set's); each role gets them under its own
    assert first["config"] == {"max_tokens": 256}
    assert first["model_roles"]["auditor"]["config"] == {"max_tokens": 40}
    assert first["model_roles"]["judge"]["config"] == {"max_tokens": 256}
    assert (first["fail_on_error"], first["continue_on_fail"]) == (True, True)  # the suite's
    assert first["flow_metadata"]["docket"]["role_sources"] == {
        "auditor": "preset p",
        "judge": "preset p",
    }
    # eval-set-wide: the stage's limit, and Inspect's no-retry of errored samples (Flow's is 3)
    assert data["options"] == {"limit": 1, "retry_on_error": 0}
    assert data["execution_type"] == "inproc"
    assert dump_spec(load_spec_data(data)) == data  # Flow reads back what docket wrote


def test_what_a_flow_spec_cannot_express_is_one_line(tmp_path: Path) -> None:
    offline = plan(load_preset("offline"), tmp_path, tasks=["smoke"])  # limit 5, then 1
    with pytest.raises(PresetError, match="'limit' is 1 here and 5 in stage scripted.*--stage"):
        flow.flow_spec(offline, str(tmp_path), "offline")
    one_stage = plan(load_preset("offline"), tmp_path, tasks=["smoke"], stages=["smollm2"])
    assert dump_spec(flow.flow_spec(one_stage, str(tmp_path), "offline"))["options"]["limit"] == 1
    odd = _preset(tmp_path, eval_args="{retry_immediate: true}")
    with pytest.raises(PresetError, match="'retry_immediate' has no Inspect Flow equivalent"):
        flow.flow_spec(plan(load_preset(str(odd)), tmp_path, tasks=["smoke"]), "l", "p")


def test_emit_flow_writes_a_spec_flow_loads_with_docket_s_hook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "spec.py"
    logs = tmp_path / "logs"
    args = ["suite", str(_preset(tmp_path)), "--task", "anchor_audit", "--log-dir", str(logs)]
    assert main([*args, "--emit-flow", str(out)]) == 0
    assert f"Flow spec: {out}" in capsys.readouterr().out
    loaded = load_spec(str(out))  # Flow's loader runs docket_flow (after_load)
    assert flow.ACTIVE == [loaded]  # the settle hook serves this spec
    assert loaded.log_dir == str(logs)
    built = [t for t in loaded.tasks or [] if isinstance(t, FlowTask)]
    assert [getattr(t.factory, "__name__", None) for t in built] == ["build_with_roles"] * 2
    assert main([*args, "--emit-flow", str(tmp_path / "spec.yaml")]) == 2
    assert "the spec is a Python file (.py)" in capsys.readouterr().out


def test_roles_are_bound_while_the_task_is_built(tmp_path: Path) -> None:
    """Flow makes the model active but binds roles only after building the task: ANCHOR's audit
    checks its auditor and reads its judges when built, so it needs `roles_at_build`."""
    plans = plan(load_preset(str(_preset(tmp_path))), tmp_path, tasks=["anchor_audit"])
    spec = flow.flow_spec(plans, str(tmp_path), "p")
    assert flow.bind_roles_at_build(spec) == 2
    [task, _] = [t for t in spec.tasks or [] if isinstance(t, FlowTask)]
    assert callable(task.factory)
    built = copy_context().run(task.factory)
    assert built.metadata is not None
    assert built.metadata["judges"] == ["judge"]
    assert any("docket/scripted policy=judge" in note for note in built.metadata["notes"])


def test_preflight_stops_a_flow_run_on_a_dead_endpoint(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    stages = f"[{{name: s, models: [{{model: openai/x, base_url: '{url}'}}]}}]"
    path = _preset(tmp_path, stages=stages)
    plans = plan(load_preset(str(path)), tmp_path, tasks=["context_qa"])
    spec = flow.flow_spec(plans, str(tmp_path), "p")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "test-key")
        with pytest.raises(flow.PreflightError) as stopped:
            flow.docket_flow(spec)
    assert stopped.value.lines == [f"{url}: connection refused"]


def _event(error: str | None) -> ModelEvent:
    output = ModelOutput(model="m") if error else ModelOutput.from_content("m", "hi")
    return ModelEvent(
        model="openai/m",
        input=[],
        tools=[],
        tool_choice="none",
        config=GenerateConfig(),
        output=output,
        error=error,
    )


def _log(folder: Path) -> Path:
    """A `success` log of two samples: sample 2's model never answered."""
    samples = [
        EvalSample(id=1, epoch=1, input="q", target="a", events=[_event(None)]),
        EvalSample(id=2, epoch=1, input="q", target="a", events=[_event("Error code: 500")]),
    ]
    log = EvalLog(
        eval=EvalSpec(
            eval_id=uuid.uuid4().hex,
            run_id=uuid.uuid4().hex,
            created="2026-12-01T12:00:00+00:00",
            task="docket/x",
            dataset=EvalDataset(name="d", samples=2, sample_ids=[1, 2]),
            model="openai/m",
            model_args={"k": 1},
            config=EvalConfig(),
        ),
        plan=EvalPlan(config=GenerateConfig(max_tokens=7)),
        status="success",
        samples=samples,
    )
    path = folder / "2026-12-01T12-00-00+00-00_x_abc.eval"
    write_eval_log(log, str(path))
    return path


async def test_the_settle_hook_errors_unanswered_samples_when_the_eval_set_ends(
    tmp_path: Path,
) -> None:
    from inspect_ai.hooks import EvalSetEnd

    path = _log(tmp_path)
    model = {"name": "openai/m", "model_args": {"k": 1}}
    task = {"name": "docket/x", "model": model, "flow_metadata": {"docket": {"stage": "s"}}}
    spec = FlowSpec.model_validate({"log_dir": str(tmp_path), "tasks": [task]})
    hook = flow.FlowSettle()
    assert not hook.enabled()  # only in a process that loaded a docket spec
    flow.ACTIVE[:] = [spec]
    assert hook.enabled()
    await hook.on_eval_set_end(EvalSetEnd(eval_set_id="e", log_dir=str(tmp_path)))
    log = read_eval_log(str(path))
    assert log.status == "error"  # eval-set resume re-runs it
    errors = {str(s.id): s.error.message if s.error else None for s in log.samples or []}
    assert errors["1"] is None and str(errors["2"]).startswith(UNANSWERED_PREFIX)
    # named as the suite names it, with its stage; run again, the line is the same
    [line] = flow.settle_log_dir(str(tmp_path), spec)
    assert line.startswith("docket/x / s / openai/m: 1 of 2 samples errored (ids 2)")


def _summary(log_dir: Path, recursive: bool) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Per (task, model, model args): roles, task args, budgets, metadata, sample scores."""
    found = {}
    for info in list_eval_logs(str(log_dir), recursive=recursive):
        log = read_eval_log(info)
        key = (log.eval.task, log.eval.model, json.dumps(log.eval.model_args, sort_keys=True))
        found[key] = {
            "status": log.status,
            "task_args": log.eval.task_args,
            "roles": {r: str(c) for r, c in (log.eval.model_roles or {}).items()},
            "max_tokens": log.plan.config.max_tokens,
            # the health record digests the log's own eval id: present on both paths, compared
            # without it
            "metadata": {k: v for k, v in (log.eval.metadata or {}).items() if k != HEALTH_KEY},
            "health_record": HEALTH_KEY in (log.eval.metadata or {}),
            "scores": {
                str(s.id): {k: v.value for k, v in (s.scores or {}).items()}
                for s in log.samples or []
            },
        }
    return found


@pytest.mark.slow
def test_flow_run_gives_the_logs_docket_suite_gives(tmp_path: Path) -> None:
    preset = str(_preset(tmp_path))
    suite_logs, flow_logs, spec = tmp_path / "suite", tmp_path / "flow", tmp_path / "spec.py"
    base = ["suite", preset, "--task", "anchor_audit"]
    assert main([*base, "--log-dir", str(flow_logs), "--emit-flow", str(spec)]) == 0
    # what `docket suite` runs (its report left out), in a copied context: eval_set leaves its
    # model active
    plans = plan(load_preset(preset), suite_logs, tasks=["anchor_audit"])
    ok, problems = copy_context().run(run_plan, plans, None, "none")
    assert ok and not problems
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        # Flow records the environment with `uv pip freeze`/`compile`: the venv's uv, offline
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "UV_OFFLINE": "1",
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    command = [sys.executable, "-m", "inspect_flow._cli.main", "run", str(spec)]
    done = subprocess.run(
        [*command, "--store", "none", "--display", "plain"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    expected = _summary(suite_logs, recursive=True)
    assert len(expected) == 2
    got = _summary(flow_logs, recursive=False)
    assert got == expected
    assert all(row["health_record"] for row in got.values())
    [comply] = [v for k, v in got.items() if "comply" in k[2]]
    assert comply["roles"]["auditor"].count("max_tokens=40") == 1
    # docket's settle ran on Flow's logs too: the budgets the calls carried are stated
    assert comply["metadata"][BUDGET_KEY]["calls"] == {
        "auditor": [40],
        "judge": [256],
        "model": [256],
    }
