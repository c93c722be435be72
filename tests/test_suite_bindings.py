"""No hidden models (issue #54 item 3) and every time limit named (item 4).

A role a task can use is bound only from what the user named (a `--role`, the preset, the model
under test) and `--dry-run` prints where each came from; an optional role is bound only when the
task's `-T` arguments use it; a preset's network role off the user's server goes to the model
under test; a failing probe names the role and its flag. Every time limit of a run is printed with
its source, the 150 s of `--time-limit 300` included (Inspect's scoring limit, shown on a real
eval), and a request timeout never ends the attempts the command line asked for.
"""

from __future__ import annotations

from contextvars import copy_context
from pathlib import Path

import anyio
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import TaskState

from docket.cli import main
from docket.suite import (
    ModelSpec,
    Overrides,
    check_endpoints,
    describe,
    load_preset,
    plan,
)
from tests.fake_openai import closed_port

URL = "http://127.0.0.1:8765/v1"


@pytest.fixture(autouse=True)
def _openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key the openai client starts with; no OPENAI_BASE_URL unless a test sets one."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def _own_server(tmp_path: Path, task: str, **task_args: object) -> list[str]:
    """The issue's command: the api preset on one's own server, judge bound as the README shows."""
    cli = Overrides(base_url=URL, task_args={"": dict(task_args)} if task_args else {})
    plans = plan(
        load_preset("api"),
        tmp_path,
        tasks=[task],
        models=["openai/qwen"],
        roles={"judge": "openai/qwen"},
        overrides=cli,
    )
    return describe(plans)


def test_an_unused_optional_role_is_unbound_and_said_so(tmp_path: Path) -> None:
    head, roles, _ = _own_server(tmp_path, "docket/anchor_direct")
    assert "gpt-4o" not in head + roles  # the preset's emulator is not bound, not probed
    assert roles.strip().startswith("roles: judge openai/qwen")
    assert "(--role)" in roles
    assert "emulator unbound (used only with -T emulator=true)" in roles


def test_a_preset_role_off_the_users_server_is_the_model_under_test(tmp_path: Path) -> None:
    # planted: the emulator is used (-T emulator=true) and the preset binds it to OpenAI
    [item] = plan(
        load_preset("api"),
        tmp_path,
        tasks=["docket/anchor_audit"],
        models=["openai/qwen"],
        roles={"judge": "openai/qwen"},
        overrides=Overrides(base_url=URL, task_args={"": {"emulator": True}}),
    )
    assert sorted(item.roles) == ["auditor", "emulator", "judge"]
    for role in ("auditor", "emulator"):
        assert item.roles[role] == item.models[0], role
        assert item.role_sources[role].startswith("the model under test: preset api's openai/gpt")
    assert item.role_sources["judge"] == "--role"


def test_openai_base_url_off_openai_counts_as_the_users_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", URL)
    [item] = plan(load_preset("api"), tmp_path, tasks=["docket/scsuff"], models=["openai/qwen"])
    assert item.roles["generator"].model == "openai/qwen"
    assert item.role_sources["generator"].startswith("the model under test")


def test_on_openais_own_api_the_presets_roles_stay_and_say_so(tmp_path: Path) -> None:
    [item] = plan(load_preset("api"), tmp_path, tasks=["docket/scsuff"])
    assert item.roles["generator"].model == "openai/gpt-4o-mini"
    assert item.role_sources == {"generator": "preset api"}


def test_a_role_on_the_users_own_server_stays_as_the_preset_binds_it(tmp_path: Path) -> None:
    preset = load_preset("api")
    judge = ModelSpec(model="openai/big", base_url=URL)
    preset = preset.model_copy(update={"roles": {"judge": judge, "generator": judge}})
    [item] = plan(
        preset,
        tmp_path,
        tasks=["docket/scsuff_hints"],
        models=["openai/small"],
        overrides=Overrides(base_url=URL),
    )
    assert item.roles["judge"].model == "openai/big"  # the user's server, the preset's name
    assert item.role_sources["judge"] == "preset api"


def test_the_local_server_preset_binds_every_role_to_the_model_under_test(tmp_path: Path) -> None:
    preset = load_preset("local-server")
    plans = plan(preset, tmp_path, models=["openai/qwen"], overrides=Overrides(base_url=URL))
    for item in plans:
        for role, spec in item.roles.items():
            assert spec == item.models[0], (item.task, role)
            assert item.role_sources[role] == "the model under test, preset local-server"
        args = item.eval_args
        assert args["max_connections"] in (1, 2)
        assert args["timeout"] >= args["attempt_timeout"] * (args["max_retries"] + 1)
        assert args["time_limit"] / 2 >= args["timeout"]  # scoring fits a judge's retries


def test_the_local_server_preset_needs_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "local-server", "--dry-run"]) == 2
    out = capsys.readouterr().out.strip()
    assert out.startswith("error: preset local-server: stage server names no model; give --model")
    assert len(out.splitlines()) == 1


def test_a_failing_probe_names_the_role_and_its_flag(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    preset = load_preset("api")
    judge = ModelSpec(model="openai/judge", base_url=dead)
    preset = preset.model_copy(update={"roles": {"judge": judge}})
    plans = plan(
        preset,
        tmp_path,
        tasks=["docket/anchor_direct"],
        models=["docket/scripted"],  # not probed: only the role's server is dead
    )
    [line] = check_endpoints(plans)
    assert line == (
        f"{dead}: connection refused; used as role judge (from preset api): bind it with "
        "--role judge=<provider/model>"
    )


def test_dry_run_names_every_time_limit_and_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["suite", "api", "--task", "anchor_direct", "--model", "openai/qwen"]
    args += ["--base-url", URL, "--role", "judge=openai/qwen", "--time-limit", "300"]
    assert main([*args, "--attempt-timeout", "300", "--dry-run", "--log-dir", str(tmp_path)]) == 0
    [limits] = [ln for ln in capsys.readouterr().out.splitlines() if "time limits:" in ln]
    assert "time_limit 300 s per sample (--time-limit)" in limits
    assert "scoring 150 s (Inspect: half the sample's time_limit" in limits  # the 150 s
    assert "attempt_timeout 300 s per model-call attempt (--attempt-timeout)" in limits
    # the preset's 300 s request timeout would have ended the first attempt: raised, said why
    assert "timeout 1200 s per model request, retries included (raised from 300 (preset api)" in (
        limits
    )
    assert "config tool_timeout=30 s (task default)" in limits  # its -T config= knob


def test_a_config_time_knob_is_named_with_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["suite", "api", "--task", "anchor_direct", "--model", "openai/qwen", "--base-url", URL]
    args += ["--role", "judge=openai/qwen", "-T", "config={tool_timeout: 45}"]
    assert main([*args, "--dry-run", "--log-dir", str(tmp_path)]) == 0
    [limits] = [ln for ln in capsys.readouterr().out.splitlines() if "time limits:" in ln]
    assert "config tool_timeout=45 s (-T config)" in limits


def test_a_timeout_no_longer_than_one_attempt_is_raised_even_from_the_preset(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\n"
        "eval_args: {attempt_timeout: 300, timeout: 300, max_retries: 2}\n"
        "stages: [{name: s, models: [openai/x]}]\n"
    )
    [item] = plan(load_preset(str(path)), tmp_path, tasks=["docket/smoke"])
    assert item.eval_args["timeout"] == 900  # three attempts of 300 s
    kept = path.read_text().replace(" timeout: 300,", " timeout: 400,")
    path.write_text(kept)  # a timeout above one attempt is the preset author's choice: kept
    [item] = plan(load_preset(str(path)), tmp_path, tasks=["docket/smoke"])
    assert item.eval_args["timeout"] == 400 and item.arg_sources["timeout"] == "preset p"


@scorer(metrics=[accuracy()])
def _slow_scorer(seconds: float) -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        await anyio.sleep(seconds)  # a judge call on a slow server
        return Score(value=1)

    return score


def test_inspect_gives_the_scorers_half_the_time_limit(tmp_path: Path) -> None:
    """The `limit: 150.0 seconds` of a `--time-limit 300` run: a scorer slower than half the
    sample's time limit (but well inside it) errors the sample with Inspect's message."""
    task = Task(dataset=[Sample(input="x", target="x")], scorer=_slow_scorer(1.5))
    [log] = copy_context().run(
        eval,
        task,
        model="docket/scripted",
        model_args={"policy": "comply"},
        time_limit=2,
        log_dir=str(tmp_path),
        display="none",
        fail_on_error=False,
    )
    assert log.samples is not None and log.samples[0].error is not None
    assert "Time limit exceeded. limit: 1.0 seconds" in log.samples[0].error.message
