"""benchmarks/presets/local.yaml: every task on the embedded model, every role bound to it."""

from __future__ import annotations

from pathlib import Path

from docket.benchmarks.presets import listed_tasks
from docket.cli import main
from docket.suite import load_preset, plan, registered_tasks

EMBEDDED = "docket/qwen"
ROLES = {"auditor", "judge", "emulator", "generator", "teacher", "distiller", "expander"}


def test_local_preset_runs_every_task_with_every_role_on_the_embedded_model(
    tmp_path: Path,
) -> None:
    preset = load_preset("local")
    assert preset.roles != "scripted" and set(preset.roles) == ROLES
    plans = plan(preset, tmp_path)
    assert [p.task for p in plans] == registered_tasks()
    listed = listed_tasks()
    for item in plans:
        assert {m.label for m in [*item.models, *item.roles.values()]} == {EMBEDDED}, item.task
        unused = set(listed[item.task].get("optional_when") or {})  # turned on by -T args
        wanted = set(listed[item.task]["roles"]) | set(listed[item.task]["optional_roles"])
        wanted -= unused
        assert set(item.roles) == wanted, item.task
        assert item.eval_args["limit"] == 2 and item.eval_args["message_limit"] == 8
    args = {p.task: p.task_args for p in plans if p.task_args}
    assert args == {
        "docket/docval_grounding": {"mode": "layout_text"},
        "docket/docval_teacher": {"with_image": False},
        "docket/spatial_relations": {"input": "text"},
    }


def test_local_preset_dry_run_takes_the_command_line_limit(capsys: object) -> None:
    code = main(["suite", "local", "--dry-run", "--limit", "1", "--task", "docket/rl_arith"])
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert code == 0
    [line] = [row for row in out.splitlines() if row.startswith("qwen: ")]
    assert line.startswith("qwen: docket/rl_arith on docket/qwen; ") and "'limit': 1" in line
