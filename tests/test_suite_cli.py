"""`docket suite`'s command line: the preset's limits stay unless --limit, unknown roles are one
line (exit 2), -M/-T/--max-tokens/--max-connections/--base-url pass through (per task with
TASK:key=value), and `--model openai/NAME --base-url URL` runs on a chat-completions server."""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import copy_context
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from docket.cli import main
from docket.suite import Overrides, PresetError, load_preset, parse_assignments, plan
from tests.fake_openai import completion, fake_openai


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield


def test_model_keeps_the_preset_limit_unless_limit_is_given(tmp_path: Path) -> None:
    preset = load_preset("api")
    [kept] = plan(preset, tmp_path, tasks=["docket/smoke"], models=["openai/gpt-4.1-mini"])
    assert kept.eval_args["limit"] == 50 and kept.eval_args["time_limit"] == 600
    [given] = plan(preset, tmp_path, tasks=["docket/smoke"], models=["openai/x"], limit=3)
    assert given.eval_args["limit"] == 3


def test_a_bare_task_name_is_docket_s_task(tmp_path: Path) -> None:
    """`--task scsuff` is `--task docket/scsuff`, as `-T scsuff:key=value` is; a bare unknown
    name is still one line."""
    preset = load_preset("api")
    bare, full = plan(preset, tmp_path, tasks=["scsuff", "docket/smoke"])
    assert (bare.task, full.task) == ("docket/scsuff", "docket/smoke")
    with pytest.raises(PresetError, match="unknown task 'docket/nope'"):
        plan(preset, tmp_path, tasks=["nope"])


def test_an_unknown_role_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "api", "--role", "jugde=openai/gpt-4o", "--dry-run"]) == 2
    out = capsys.readouterr().out.strip()
    assert out.startswith("error: --role jugde: no docket task has a 'jugde' role (roles: ")
    assert "judge" in out and len(out.splitlines()) == 1


def test_assignments_for_every_task_and_for_one() -> None:
    found = parse_assignments(
        "-T", ["mode=layout_text", "docval_grounding:max_tokens=64", "docket/smoke:x=true"]
    )
    assert found == {
        "": {"mode": "layout_text"},
        "docket/docval_grounding": {"max_tokens": 64},
        "docket/smoke": {"x": True},
    }
    url = parse_assignments("-M", ["base_url=http://127.0.0.1:8/v1"])
    assert url == {"": {"base_url": "http://127.0.0.1:8/v1"}}  # the value's colons stay
    with pytest.raises(PresetError, match="unknown task 'docket/nope'"):
        parse_assignments("-T", ["nope:x=1"])
    with pytest.raises(PresetError, match="expected key=value"):
        parse_assignments("-M", ["novalue"])


def test_flags_pass_through_to_every_task_or_one(tmp_path: Path) -> None:
    cli = Overrides(
        model_args=parse_assignments("-M", ["temperature_hint=1", "docket/smoke:k=2"]),
        task_args=parse_assignments("-T", ["docket/docval_grounding:mode=layout_text"]),
        eval_args={"max_tokens": 99, "max_connections": 4},
        base_url="http://127.0.0.1:9/v1",
    )
    tasks = ["docket/smoke", "docket/docval_grounding"]
    smoke, docval = plan(load_preset("api"), tmp_path, tasks=tasks, overrides=cli)
    assert smoke.models[0].args == {"temperature_hint": 1, "k": 2, "responses_api": False}
    assert docval.models[0].args == {"temperature_hint": 1, "responses_api": False}
    assert smoke.models[0].base_url == "http://127.0.0.1:9/v1"
    assert docval.task_args == {"mode": "layout_text"} and smoke.task_args == {}
    assert docval.forced_task_args == {"mode"}
    for item in (smoke, docval):
        assert (item.eval_args["max_tokens"], item.eval_args["max_connections"]) == (99, 4)


def test_openai_models_off_openai_use_chat_completions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preset = load_preset("api")
    [own] = plan(preset, tmp_path, tasks=["docket/smoke"])
    assert own.models[0].args == {}  # OpenAI's own API: Inspect chooses
    explicit = Overrides(model_args={"": {"responses_api": True}}, base_url="http://127.0.0.1:9/v1")
    [kept] = plan(preset, tmp_path, tasks=["docket/smoke"], overrides=explicit)
    assert kept.models[0].args == {"responses_api": True}
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    [env] = plan(preset, tmp_path, tasks=["docket/anchor_direct"])
    assert env.models[0].args == {"responses_api": False}
    assert all(r.args == {"responses_api": False} for r in env.roles.values())


def test_base_url_reaches_network_roles_given_on_the_command_line(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"
    roles = {"judge": "openai/local", "emulator": "docket/scripted"}
    [item] = plan(
        load_preset("api"),
        tmp_path,
        tasks=["docket/anchor_direct"],
        roles=roles,
        overrides=Overrides(base_url=url),
    )
    assert item.roles["judge"].base_url == url
    assert item.roles["judge"].args == {"responses_api": False}
    assert item.roles["emulator"].base_url is None  # a local provider has no server


def test_a_bad_flag_value_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "api", "--max-tokens", "0", "--dry-run"]) == 2
    assert capsys.readouterr().out.strip() == "error: --max-tokens must be at least 1"
    assert main(["suite", "api", "-T", "nope:x=1", "--dry-run"]) == 2
    assert "unknown task 'docket/nope'" in capsys.readouterr().out


def test_api_suite_runs_on_an_openai_compatible_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`docket suite api --model openai/NAME --base-url URL`: every call goes to the server's
    chat-completions route (it has no Responses API) with --max-tokens, and the task gets -T."""
    logs = tmp_path / "logs"
    with fake_openai(lambda _: (200, completion("Paris")), None) as server:
        args = ["suite", "api", "--task", "docket/context_qa", "--model", "openai/local"]
        args += ["--base-url", server.base_url, "--limit", "1", "--max-tokens", "5"]
        args += ["-T", "context_qa:context=none", "--log-dir", str(logs), "--display", "none"]
        assert copy_context().run(main, args) == 0
        paths = {r["_path"] for r in server.requests}
        tokens = [r["max_tokens"] for r in server.chats()]  # plain chat shape, not gpt-5's
    assert paths == {"/v1/chat/completions"}
    assert tokens == [16, 5]  # the probe, then the sample with --max-tokens
    [info] = list_eval_logs(str(logs / "docket_context_qa" / "models"))
    log = read_eval_log(info, header_only=True)
    assert log.status == "success" and log.eval.task_args["context"] == "none"
    assert log.eval.model_args == {"responses_api": False}
