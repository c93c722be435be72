"""DocVAL through `docket/local`: a text-only checkpoint in vision mode (or as a teacher given the
page) stops with one line, and the demo's arguments let text models run both tasks."""

from __future__ import annotations

from contextvars import copy_context
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import get_model

from docket.core.inspect_private import PrerequisiteError
from docket.core.tiny_models import build_tiny_text_lm


@pytest.fixture(scope="module")
def text_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A text-only Llama checkpoint (the tiny LLaVA's language model and tokenizer)."""
    return build_tiny_text_lm(tmp_path_factory.mktemp("text-only"), ["ANSWER: x BBOX: [1, 2]"])


def test_a_text_model_in_vision_mode_stops_with_one_line(
    text_checkpoint: Path, tmp_path: Path
) -> None:
    model = f"docket/local/{text_checkpoint}"
    line = f"model {model} cannot read images; use -T mode=layout_text"
    with pytest.raises(PrerequisiteError) as info:
        inspect_eval("docket/docval_grounding", model=model, display="none", limit=1)
    assert info.value.message == line
    log = inspect_eval(
        "docket/docval_grounding",
        model=model,
        task_args={"mode": "layout_text", "max_tokens": 4},
        log_dir=str(tmp_path),
        display="none",
        limit=1,
    )[0]
    assert log.status == "success" and (log.eval.metadata or {})["mode"] == "layout_text"


def test_a_text_teacher_given_the_page_image_stops_with_one_line(text_checkpoint: Path) -> None:
    teacher = get_model(f"docket/local/{text_checkpoint}")
    refuse = get_model("docket/scripted", policy="refuse")
    with pytest.raises(PrerequisiteError) as info:
        inspect_eval(
            "docket/docval_teacher",
            model=refuse,
            model_roles={"teacher": teacher},
            display="none",
            limit=1,
        )
    line = f"model docket/local/{text_checkpoint} cannot read images; use -T with_image=false"
    assert info.value.message == line


@pytest.mark.parametrize("task", ["docket/docval_grounding", "docket/docval_teacher"])
def test_the_demo_runs_docval_on_text_models(
    task: str, text_checkpoint: Path, tmp_path: Path
) -> None:
    from docket.suite import load_preset, plan, run_plan, task_args

    preset = load_preset("offline")
    [item] = plan(preset, tmp_path, tasks=[task], models=[f"docket/local/{text_checkpoint}"])
    item.eval_args.update(limit=1, max_tokens=4)
    # eval_set leaves its last model active in the calling context; run it in a copy so later
    # tasks built outside an eval do not see it
    ran, problems = copy_context().run(run_plan, [item], None, "none")
    assert ran, problems
    [info] = list_eval_logs(str(item.log_dir))
    log = read_eval_log(info)
    assert log.status == "success"
    assert log.eval.task_args | task_args(preset, task) == log.eval.task_args
    mode = (log.eval.metadata or {})["mode"]
    assert mode == ("layout_text" if task.endswith("grounding") else "teacher")
