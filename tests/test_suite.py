"""`docket suite PRESET`: the shipped presets are valid, bad ones are one line, and the offline
preset runs and reports (the api preset is checked for validity only: no network here)."""

from __future__ import annotations

import json
from contextvars import copy_context
from pathlib import Path

import pytest

from docket.benchmarks.presets import listed_tasks, preset_names
from docket.cli import main
from docket.suite import PresetError, load_preset, plan, registered_tasks


def test_presets_ship_with_the_package() -> None:
    assert preset_names() == ["api", "local", "local-server", "offline"]


def test_api_preset_binds_every_required_role_with_openai_models(tmp_path: Path) -> None:
    preset = load_preset("api")
    plans = plan(preset, tmp_path)
    assert [p.task for p in plans] == registered_tasks()
    for item in plans:
        required = listed_tasks()[item.task]["roles"]
        assert set(required) <= set(item.roles), item.task
        assert all(m.model.startswith("openai/") for m in [*item.models, *item.roles.values()])
        assert item.log_dir == tmp_path / item.task.replace("/", "_") / "api"
    anchor = next(p for p in plans if p.task == "docket/anchor_audit")
    assert sorted(anchor.roles) == ["auditor", "judge"]  # the emulator only with -T emulator=true
    smoke = next(p for p in plans if p.task == "docket/smoke")
    assert smoke.roles == {}  # a task gets only the roles its listing names


def test_local_preset_runs_every_task_with_every_role_on_qwen(tmp_path: Path) -> None:
    preset = load_preset("local")
    plans = plan(preset, tmp_path)
    assert [p.task for p in plans] == registered_tasks()
    for item in plans:
        listed = listed_tasks()[item.task]
        unused = set(listed.get("optional_when") or {})  # optional roles the -T args turn on
        wanted = {*listed.get("roles", []), *listed.get("optional_roles", [])} - unused
        assert set(item.roles) == wanted, item.task  # required roles and the used optional ones
        assert {m.model for m in [*item.models, *item.roles.values()]} == {"docket/qwen"}
        assert item.eval_args["limit"] == 2 and item.eval_args["max_tokens"] == 128
        assert item.eval_args["max_connections"] == 2  # both samples decode in one batch
    by_task = {p.task: p.task_args for p in plans}
    assert by_task["docket/docval_grounding"] == {"mode": "layout_text"}  # text-only model
    assert by_task["docket/docval_teacher"] == {"with_image": False}
    assert by_task["docket/spatial_relations"] == {"input": "text"}
    assert preset.budget_minutes is None  # one stage: a budget would never stop it


def test_offline_preset_binds_scripted_roles_and_reference_policies(tmp_path: Path) -> None:
    plans = plan(load_preset("offline"), tmp_path)
    audit = next(p for p in plans if p.task == "docket/anchor_audit" and p.stage == "scripted")
    assert {r: m.label for r, m in audit.roles.items()} == {
        "auditor": "docket/scripted policy=auditor",
        "judge": "docket/scripted policy=judge",
    }
    labels = [m.label for m in audit.models]
    assert labels[:2] == ["docket/scripted policy=comply", "docket/scripted policy=refuse"]
    assert audit.eval_args["limit"] == 5
    smollm2 = [p for p in plans if p.stage == "smollm2"]
    assert {m.label for p in smollm2 for m in p.models} == {"docket/smollm2"}
    assert "docket/correct_localization" in {p.task for p in smollm2}
    grounding = next(p for p in plans if p.task == "docket/docval_grounding")
    assert grounding.task_args == {"mode": "layout_text"}
    spatial = next(p for p in plans if p.task == "docket/spatial_relations")
    assert spatial.task_args == {"input": "text"}
    with_args = ("docket/docval", "docket/spatial_relations")
    assert all(p.task_args == {} for p in plans if not p.task.startswith(with_args))


def test_overrides_from_the_command_line(tmp_path: Path) -> None:
    plans = plan(
        load_preset("api"),
        tmp_path,
        tasks=["docket/anchor_direct"],
        models=["openai/gpt-4.1-mini"],
        roles={"judge": "anthropic/claude-3-5-haiku-latest"},
        limit=3,
    )
    [item] = plans
    assert [m.label for m in item.models] == ["openai/gpt-4.1-mini"]
    assert item.roles["judge"].model == "anthropic/claude-3-5-haiku-latest"
    assert item.eval_args["limit"] == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("format: docket-suite/9\n", "format"),
        (
            "format: docket-suite/1\nname: x\nlog_dir: l\nstages: [{name: s, models: [gpt]}]\n",
            "must be provider/name",
        ),
        ("format: docket-suite/1\nname: x\nlog_dir: l\nstages: []\nbogus: 1\n", "bogus"),
        (
            "format: docket-suite/1\nname: x\nlog_dir: l\neval_args: {nope: 1}\nstages: []\n",
            "'nope' is not an eval_set argument",
        ),
        (": : :", "not valid YAML"),
    ],
)
def test_bad_preset_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "preset.yaml"
    path.write_text(text)
    with pytest.raises(PresetError) as error:
        load_preset(str(path))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_unbound_required_role_stops_the_suite_before_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\nroles: {}\n"
        "stages: [{name: s, models: [openai/gpt-4o]}]\n"
    )
    assert main(["suite", str(path), "--task", "docket/anchor_audit", "--dry-run"]) == 2
    out = capsys.readouterr().out
    assert "binds no 'auditor' role" in out and len(out.strip().splitlines()) == 1


def test_dry_run_prints_the_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["suite", "api", "--dry-run", "--log-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    heads = [line for line in lines if not line.startswith("  ")]
    assert len(heads) == len(registered_tasks())
    assert heads[0].startswith("api: docket/smoke on openai/gpt-4o-mini")
    assert len(lines) == 3 * len(heads)  # each with its roles and its time limits


@pytest.mark.slow
def test_offline_suite_on_smoke_runs_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["suite", "offline", "--task", "docket/smoke", "--stage", "scripted", "--limit", "1"]
    # eval_set leaves its model and roles active in the calling context: run it in a copy, so
    # later tests that build tasks outside an eval do not see them
    run = [*args, "--log-dir", str(tmp_path / "logs"), "--display", "none"]
    assert copy_context().run(main, run) == 0
    html = tmp_path / "logs-report" / "index.html"
    assert str(html) in capsys.readouterr().out.splitlines()[-1]
    data = json.loads((tmp_path / "logs-report" / "leaderboard.json").read_text())
    [table] = data["benchmarks"][0]["tables"]
    values = {e["model"]: e["value"] for e in table["entries"]}
    assert values == {"docket/scripted policy=comply": 1.0, "docket/scripted policy=refuse": 0.0}
    assert all(
        e["tokens"]["total"] >= 0 and e["wall_seconds"] is not None for e in table["entries"]
    )


def test_task_args_must_name_registered_tasks(tmp_path: Path) -> None:
    preset = load_preset("offline").model_copy(update={"task_args": {"docket/nope": {"x": 1}}})
    with pytest.raises(PresetError, match="task_args names unknown task 'docket/nope'"):
        plan(preset, tmp_path)


def test_a_stage_skips_its_skip_tasks(tmp_path: Path) -> None:
    preset = load_preset("offline")
    stages = [
        s.model_copy(update={"skip_tasks": ["docket/smoke"]}) if s.name == "smollm2" else s
        for s in preset.stages
    ]
    plans = plan(preset.model_copy(update={"stages": stages}), tmp_path)
    assert "docket/smoke" not in {p.task for p in plans if p.stage == "smollm2"}
    assert "docket/smoke" in {p.task for p in plans if p.stage == "scripted"}
