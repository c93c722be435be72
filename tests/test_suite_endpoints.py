"""`docket suite` on real endpoints: a dead or failing server is one line before anything runs,
a sample whose model never answered is errored (never scored), named, and re-run next time.

Every server here is a local fake (`tests/fake_openai.py`) or a closed port on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import copy_context
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import get_model

from docket import endpoints
from docket.benchmarks.context_qa.dataset import load as load_context_qa
from docket.cli import main
from docket.core.errored import UNANSWERED_PREFIX
from docket.suite import load_preset
from tests.fake_openai import (
    closed_port,
    completion,
    error_body,
    fake_openai,
    prompt_text,
)

PROBE = "Reply with the word OK."


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield


def _model(base_url: str, name: str = "fake") -> object:
    return get_model(
        f"openai/{name}", base_url=base_url, memoize=False, responses_api=False, max_retries=0
    )


def _suite(args: list[str]) -> int:
    """`docket suite ...` in a copied context (eval_set leaves its model active)."""
    return copy_context().run(main, ["suite", *args, "--display", "none"])


def test_a_closed_port_is_connection_refused() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert endpoints.endpoint_problem(_model(url)) == f"{url}: connection refused"  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [400, 500])
def test_an_http_error_shows_the_servers_reason_in_one_line(status: int) -> None:
    reason = f"The model `fake` does not exist (status {status})"
    with fake_openai(lambda _: (status, error_body(reason)), None) as server:
        line = endpoints.endpoint_problem(_model(server.base_url))  # type: ignore[arg-type]
        calls = len(server.chats())
    assert line == f"{server.base_url} (openai/fake): HTTP {status}: {reason}"
    assert calls == 1  # one cheap call, no retries


def test_a_healthy_endpoint_passes_with_one_small_call() -> None:
    with fake_openai(lambda _: (200, completion("OK")), None) as server:
        assert endpoints.endpoint_problem(_model(server.base_url)) is None  # type: ignore[arg-type]
        [request] = server.chats()
    assert request["max_completion_tokens"] == 16 and prompt_text(request) == PROBE


def test_local_providers_are_never_probed() -> None:
    assert not endpoints.is_network("docket/scripted")
    assert not endpoints.is_network("mockllm/model")
    assert endpoints.is_network("openai/gpt-4o") and endpoints.is_network("openai-api/x/y")


def test_server_reason_reads_openai_and_plain_bodies() -> None:
    assert endpoints.server_reason({"error": {"message": "bad model"}}) == "bad model"
    assert endpoints.server_reason({"detail": [{"msg": "field required"}]}) == "field required"
    assert endpoints.server_reason({"message": "nope"}) == "nope"
    assert endpoints.server_reason({"other": 1}) is None


def test_the_api_preset_bounds_retries_and_timeouts() -> None:
    args = load_preset("api").eval_args
    assert (args["max_retries"], args["attempt_timeout"], args["timeout"]) == (3, 120, 300)


def test_a_dead_endpoint_stops_the_suite_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    args = ["api", "--task", "docket/context_qa", "--model", "openai/fake", "--base-url", url]
    assert _suite([*args, "--log-dir", str(tmp_path / "logs")]) == 1
    out = capsys.readouterr().out
    assert f"error: {url}: connection refused" in out.splitlines()
    assert "Traceback" not in out and not (tmp_path / "logs").exists()


def test_a_wrong_model_name_is_the_servers_reason_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = "The model `nope` does not exist."
    with fake_openai(lambda _: (404, error_body(reason, "NotFoundError")), None) as server:
        args = ["api", "--task", "docket/context_qa", "--model", "openai/nope"]
        code = _suite([*args, "--base-url", server.base_url, "--log-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert f"error: {server.base_url} (openai/nope): HTTP 404: {reason}" in out.splitlines()
    assert "Traceback" not in out


def _preset(tmp_path: Path, time_limit: int = 2, fail_on_error: bool = True) -> Path:
    path = tmp_path / "p.yaml"
    limits = f"time_limit: {time_limit}, fail_on_error: {str(fail_on_error).lower()}"
    path.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\nroles: {}\n"
        f"eval_args: {{{limits}, max_retries: 0, timeout: 10, retry_attempts: 0}}\n"
        "stages: [{name: s, models: [openai/fake], eval_args: {limit: 2}}]\n"
    )
    return path


def test_an_unanswered_sample_is_errored_named_and_rerun_next_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server answers the probe at once and the samples after the 2 s time limit: Inspect
    would score them (0 for a wrong answer); the suite errors them, exits 1 and names them; the
    next run against a working server re-runs exactly those two and exits 0."""
    logs = tmp_path / "logs"
    args = [str(_preset(tmp_path)), "--task", "docket/context_qa", "--log-dir", str(logs)]

    def slow(request: dict[str, object]) -> float:
        return 0.0 if prompt_text(request) == PROBE else 4.0

    with fake_openai(lambda _: (200, completion("ok")), slow) as server:
        assert _suite([*args, "--base-url", server.base_url]) == 1
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if "samples errored" in x]
    first_id, second_id = (q.id for q in load_context_qa()[1][:2])  # the shipped split's first two
    assert line.startswith(
        f"docket/context_qa / s / openai/fake: 2 of 2 samples errored (ids {first_id}, {second_id})"
    )
    folder = logs / "docket_context_qa" / "s"
    [first] = list_eval_logs(str(folder))
    log = read_eval_log(first)
    assert log.status == "error"
    assert all(s.error and s.error.message.startswith(UNANSWERED_PREFIX) for s in log.samples or [])
    with fake_openai(lambda _: (200, completion("ok")), None) as server:
        assert _suite([*args, "--base-url", server.base_url]) == 0
        asked = [prompt_text(r) for r in server.chats()]
    assert len(asked) == 3 and asked.count(PROBE) == 1  # the probe, then the two samples
    [second] = list_eval_logs(str(folder))
    rerun = read_eval_log(second)
    assert rerun.status == "success" and all(s.error is None for s in rerun.samples or [])


@pytest.mark.parametrize("fail_on_error", [True, False])
def test_a_server_error_on_every_sample_is_errored_not_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fail_on_error: bool
) -> None:
    """Inspect's own sample errors (every retry got a 500) are named, and their log is left
    `error` for the next run to resume, whatever the preset's `fail_on_error`."""

    def respond(request: dict[str, object]) -> tuple[int, dict[str, object]]:
        if prompt_text(request) == PROBE:
            return 200, completion("OK")
        return 500, error_body("CUDA out of memory", "server_error")

    logs = tmp_path / "logs"
    preset = str(_preset(tmp_path, time_limit=60, fail_on_error=fail_on_error))
    args = [preset, "--task", "docket/context_qa", "--log-dir", str(logs)]
    with fake_openai(respond, None) as server:
        assert _suite([*args, "--base-url", server.base_url]) == 1
    [line] = [x for x in capsys.readouterr().out.splitlines() if "samples errored" in x]
    assert "2 of 2 samples errored" in line
    assert line.endswith("): Error code: 500 - CUDA out of memory; the next run re-runs them")
    [info] = list_eval_logs(str(logs / "docket_context_qa" / "s"))
    assert read_eval_log(info).status == "error"


def test_a_compatible_servers_model_gets_plain_chat_requests() -> None:
    """Inspect takes an unknown `openai/` name for an unreleased frontier model (system prompt
    as a `developer` message, no temperature, `max_completion_tokens`); the suite's models on
    another server are sent as a plain chat model's requests."""
    import asyncio

    from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, GenerateConfig

    from docket.suite import ModelSpec, _chat_completions, _model

    with fake_openai(lambda _: (200, completion("ok")), None) as server:
        spec = _chat_completions(ModelSpec(model="openai/local-qwen-x1", base_url=server.base_url))
        model = _model(spec, GenerateConfig(max_tokens=7, temperature=0.0))
        messages: list[ChatMessage] = [
            ChatMessageSystem(content="be brief"),
            ChatMessageUser(content="hi"),
        ]
        asyncio.run(model.generate(messages))
        [request] = server.chats()
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert request["temperature"] == 0.0 and request["max_tokens"] == 7
    assert "max_completion_tokens" not in request


def test_openai_models_on_openais_servers_keep_inspects_shape() -> None:
    from inspect_ai.model import get_model_info

    from docket.suite import ModelSpec, plain_chat_shape

    before = get_model_info("openai/unreleased-name-7")
    plain_chat_shape(ModelSpec(model="openai/unreleased-name-7"))  # no base URL: api.openai.com
    plain_chat_shape(
        ModelSpec(model="openai/unreleased-name-7", base_url="https://api.openai.com/v1")
    )
    assert get_model_info("openai/unreleased-name-7") == before is None


def test_attempt_timeout_on_the_command_line_overrides_the_preset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The preset allows 1 s per call and the server answers in 2.5 s: every sample's only attempt
    is abandoned (errored, named). `--attempt-timeout 30` on the same preset waits the answer
    out, scores both samples and the log records 30 as the run's attempt timeout."""
    path = tmp_path / "p.yaml"
    path.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\nroles: {}\n"
        "eval_args: {time_limit: 60, attempt_timeout: 1, max_retries: 0, timeout: 60,"
        " retry_attempts: 0}\n"
        "stages: [{name: s, models: [openai/fake], eval_args: {limit: 2}}]\n"
    )
    logs = tmp_path / "logs"
    args = [str(path), "--task", "docket/context_qa", "--log-dir", str(logs)]

    def slow(request: dict[str, object]) -> float:
        return 0.0 if prompt_text(request) == PROBE else 2.5

    with fake_openai(lambda _: (200, completion("ok")), slow) as server:
        assert _suite([*args, "--base-url", server.base_url]) == 1
        [line] = [x for x in capsys.readouterr().out.splitlines() if "samples errored" in x]
        assert "2 of 2 samples errored" in line and "attempt_timeout '1' exceeded" in line
        assert _suite([*args, "--base-url", server.base_url, "--attempt-timeout", "30"]) == 0
    [info] = list_eval_logs(str(logs / "docket_context_qa" / "s"))
    log = read_eval_log(info)
    assert log.status == "success" and len(log.samples or []) == 2
    assert log.plan.config.attempt_timeout == 30


@pytest.mark.parametrize("flag", ["--attempt-timeout", "--time-limit"])
def test_a_timeout_flag_below_one_second_is_one_line(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["suite", "api", flag, "0", "--dry-run"]) == 2
    assert capsys.readouterr().out.strip() == f"error: {flag} must be at least 1"


def test_timeout_flags_win_over_the_preset_and_its_stage(tmp_path: Path) -> None:
    from docket.suite import Overrides, plan

    cli = Overrides(eval_args={"attempt_timeout": 900, "time_limit": 1800})
    [item] = plan(load_preset("api"), tmp_path, tasks=["docket/smoke"], overrides=cli)
    assert (item.eval_args["attempt_timeout"], item.eval_args["time_limit"]) == (900, 1800)
    assert item.eval_args["max_retries"] == 3  # what the flags do not name stays the preset's
    # the preset's request timeout (300, retries included) would end the first 900 s attempt:
    # it is raised to the attempts the flag asks for, and its source says so
    assert item.eval_args["timeout"] == 900 * 4
    assert item.arg_sources["timeout"].startswith("raised from 300 (preset api)")
