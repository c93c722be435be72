"""Nothing answers blind: before an image task runs, each network reader is shown a probe image;
a text-only model gets the preset's text variant, or (images forced on the command line) the
suite stops with docket/local's one line. The servers are local fakes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import get_model

from docket import endpoints
from docket.cli import main
from docket.suite import Overrides, fit_image_tasks, load_preset, parse_assignments, plan
from tests.fake_openai import completion, fake_openai, has_image

IMAGE_TASKS = ["docket/docval_grounding", "docket/docval_teacher", "docket/spatial_relations"]


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield


def text_only(_: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A text-only server: it ignores images and answers the same words."""
    return 200, completion("I think it is blue.")


def sighted(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A server that reads images: it names the probe's colour."""
    return 200, completion("Green." if has_image(request) else "OK")


def _plans(tmp_path: Path, base_url: str, forced: list[str] | None = None) -> list[Any]:
    cli = Overrides(task_args=parse_assignments("-T", forced), base_url=base_url)
    return plan(
        load_preset("api"),
        tmp_path,
        tasks=IMAGE_TASKS,
        models=["openai/fake"],
        roles={"teacher": "openai/fake"},
        overrides=cli,
    )


def test_the_probe_image_is_a_valid_png() -> None:
    uri = endpoints.probe_image()
    assert uri.startswith("data:image/png;base64,iVBORw0KGgo")


def test_a_text_only_model_runs_the_text_variants(tmp_path: Path) -> None:
    said: list[str] = []
    with fake_openai(text_only, None) as server:
        plans = _plans(tmp_path, server.base_url)
        assert fit_image_tasks(plans, said.append) == []
        probes = [r for r in server.chats() if has_image(r)]
    assert len(probes) == 1  # one probe for the model and the teacher (the same endpoint)
    args = {p.task: p.task_args for p in plans}
    assert args == {
        "docket/docval_grounding": {"mode": "layout_text"},
        "docket/docval_teacher": {"with_image": False},
        "docket/spatial_relations": {"input": "text"},
    }
    assert said[0] == (
        "docket/docval_grounding / models: model openai/fake cannot read images; "
        "use -T mode=layout_text: running with it"
    )
    assert said[1].endswith("cannot read images; use -T with_image=false: running with it")


def test_a_model_that_reads_images_keeps_the_image_tasks(tmp_path: Path) -> None:
    said: list[str] = []
    with fake_openai(sighted, None) as server:
        plans = _plans(tmp_path, server.base_url)
        assert fit_image_tasks(plans, said.append) == []
        model = get_model(
            "openai/fake", base_url=server.base_url, memoize=False, responses_api=False
        )
        assert endpoints.reads_images(model)
    assert said == [] and all(p.task_args == {} for p in plans)


def test_images_forced_on_a_text_only_model_stop_with_one_line(tmp_path: Path) -> None:
    with fake_openai(text_only, None) as server:
        plans = _plans(tmp_path, server.base_url, ["docval_grounding:mode=vision"])
        stops = fit_image_tasks(plans, lambda _: None)
    assert stops == [
        "docket/docval_grounding: model openai/fake cannot read images; use -T mode=layout_text"
    ]


def test_the_suite_stops_before_running_blind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_openai(text_only, None) as server:
        args = ["suite", "api", "--task", "docket/spatial_relations", "--model", "openai/fake"]
        args += ["--base-url", server.base_url, "-T", "input=image", "--log-dir", str(tmp_path)]
        assert main(args) == 1
    lines = capsys.readouterr().out.splitlines()
    assert (
        "error: docket/spatial_relations: model openai/fake cannot read images; use -T input=text"
    ) in lines
    assert lines[-1] == "nothing ran" and not list(tmp_path.iterdir())


def test_a_server_that_refuses_images_reads_none() -> None:
    def refuse(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if has_image(request):
            return 400, {"error": {"message": "image input is not supported"}}
        return 200, completion("OK")

    with fake_openai(refuse, None) as server:
        model = get_model(
            "openai/fake", base_url=server.base_url, memoize=False, responses_api=False
        )
        assert endpoints.reads_images(model) is False
