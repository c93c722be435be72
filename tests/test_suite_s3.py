"""Every docket command that reads or writes logs, on an S3 store: `suite` (eval-set resume and
the errored-sample re-runs included), `report` (and `--serve`), `regress`, `power`, `check`,
against a real S3 gateway (SeaweedFS on 127.0.0.1, `tests/s3_support.py`); a dead store is one
line before anything runs."""

from __future__ import annotations

import json
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextvars import copy_context
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log

from docket.cli import main
from docket.core import logstore
from docket.reports import serve
from docket.reports.health import HEALTH_KEY, read_log_health
from tests.fake_openai import closed_port, completion, error_body, fake_openai, prompt_text
from tests.s3_support import S3Store

STUDENT = "docket/scripted error_rate=0.0 policy=toy_math_student"
CONSTANT = "docket/scripted policy=toy_math_constant"
PROBE = "Reply with the word OK."


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield


def _suite(args: list[str]) -> int:
    """`docket suite ...` in a copied context (eval_set leaves its model active)."""
    return copy_context().run(main, ["suite", *args, "--display", "none"])


def _scripted_preset(tmp_path: Path) -> Path:
    path = tmp_path / "scripted.yaml"
    path.write_text(
        "format: docket-suite/1\nname: s3\nlog_dir: logs\ntasks: [docket/toy_math]\n"
        "roles: scripted\neval_args: {retry_attempts: 1}\n"
        "stages: [{name: s, eval_args: {limit: 4}, models: ["
        "{model: docket/scripted, args: {policy: toy_math_student, error_rate: 0.0}}, "
        "{model: docket/scripted, args: {policy: toy_math_constant}}]}]\n"
    )
    return path


def _values(report: Path) -> dict[str, Any]:
    data = json.loads((report / "leaderboard.json").read_text())
    [table] = data["benchmarks"][0]["tables"]
    return {e["model"]: e["value"] for e in table["entries"]}


def _store_headers(location: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        copies = logstore.download(logstore.find_logs(location), location, Path(folder))
        return {url: read_eval_log(str(p), header_only=True) for url, p in copies.items()}


@pytest.fixture(scope="module")
def store_run(s3_store: S3Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One suite run of the scripted preset into a fresh prefix of the store (its URL)."""
    folder = tmp_path_factory.mktemp("store-run")
    with pytest.MonkeyPatch.context() as monkeypatch:
        for key, value in s3_store.env().items():
            monkeypatch.setenv(key, value)
        url = s3_store.url()
        args = [str(_scripted_preset(folder)), "--log-dir", url, "-o", str(folder / "report")]
        assert _suite(args) == 0
        assert _values(folder / "report") == {STUDENT: 1.0, CONSTANT: 0.0}
        yield url


def test_suite_resumes_and_every_command_reads_the_store(
    store_run: str, s3_env: S3Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = store_run
    logs = logstore.find_logs(url)
    assert len(logs) == 2 and all(log.startswith(f"{url}/docket_toy_math/s/") for log in logs)
    for log in logs:  # the suite stored each log's health: a report reads no sample
        with logstore.local_copy(log) as path:
            assert HEALTH_KEY in (read_eval_log(str(path), header_only=True).eval.metadata or {})
            assert read_log_health(path).samples is None

    # eval-set resume: a second run reuses both logs and writes none
    args = [str(_scripted_preset(tmp_path)), "--log-dir", url, "-o", str(tmp_path / "again")]
    assert _suite(args) == 0
    assert logstore.find_logs(url) == logs
    capsys.readouterr()

    assert main(["report", url, "-o", str(tmp_path / "report")]) == 0
    assert _values(tmp_path / "report") == {STUDENT: 1.0, CONSTANT: 0.0}
    data = json.loads((tmp_path / "report" / "leaderboard.json").read_text())
    assert data["log_dir"] == url
    assert {e["log"] for e in data["benchmarks"][0]["tables"][0]["entries"]} == set(logs)
    capsys.readouterr()

    assert main(["check", url]) == 0
    assert capsys.readouterr().out.strip() == "ok: 2 run(s) finished, 8 samples, none errored"

    baseline = tmp_path / "baseline.json"
    assert main(["regress", "--baseline", str(baseline), "--logs", url, "--write-baseline"]) == 0
    entries = json.loads(baseline.read_text())["entries"]
    assert sorted(e["value"] for e in entries) == [0.0, 1.0]
    capsys.readouterr()
    code = main(["regress", "--baseline", str(baseline), "--logs", url])
    out = capsys.readouterr().out
    assert code == 2 and "docket/toy_math" in out  # 4 samples cannot rule out a 0.05 drop

    assert main(["power", "--logs", url]) == 0
    assert "docket/toy_math" in capsys.readouterr().out


def test_report_serve_bundles_the_stores_logs(
    store_run: str, s3_env: S3Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store_run
    servers: list[Any] = []
    make = serve.make_server

    def capture(directory: str | Path, port: int = 0, host: str = "127.0.0.1") -> Any:
        servers.append(make(directory, 0, host))
        return servers[-1]

    monkeypatch.setattr(serve, "make_server", capture)
    codes: list[int] = []
    out = tmp_path / "served"
    thread = threading.Thread(
        target=lambda: codes.append(main(["report", url, "-o", str(out), "--serve"]))
    )
    thread.start()
    deadline = time.monotonic() + 120
    while not servers and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert servers, "report --serve never served"
    try:
        base = serve.url_of(servers[0])
        with urllib.request.urlopen(base + "index.html", timeout=10) as page:
            html = page.read().decode()
        with urllib.request.urlopen(base + "bundle/index.html", timeout=10) as page:
            assert page.status == 200
        for log in logstore.find_logs(url):
            relative = logstore.relative(log, url)
            assert f"bundle/index.html#/logs/{relative}" in html
            with urllib.request.urlopen(f"{base}bundle/logs/{relative}", timeout=10) as page:
                assert page.status == 200 and page.read()[:2] == b"PK"  # the .eval zip
    finally:
        servers[0].shutdown()
        thread.join(timeout=30)
    assert codes == [0]


def test_a_dead_store_is_one_line_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    store = "s3://bucket/runs"
    line = f"error: {store}: log store not reachable at {endpoint} (AWS_ENDPOINT_URL): "
    line += "connection refused"
    assert _suite([str(_scripted_preset(tmp_path)), "--log-dir", store]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [line, "nothing ran"] and not any("Traceback" in x for x in out)
    baseline = str(tmp_path / "b.json")
    for args in (
        ["report", store, "-o", str(tmp_path / "r")],
        ["check", store],
        ["regress", "--baseline", baseline, "--logs", store],
        ["power", "--logs", store],
    ):
        assert main(args) == 2, args
        assert capsys.readouterr().out.splitlines() == [line], args


def test_errored_samples_are_rerun_from_the_store(
    s3_env: S3Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server error on every sample: the log in the store is left `error` and named; the next
    run against a working server re-runs exactly those samples and ends `success`."""
    url = s3_env.url()
    preset = tmp_path / "p.yaml"
    preset.write_text(
        "format: docket-suite/1\nname: p\nlog_dir: l\nroles: {}\n"
        "eval_args: {time_limit: 60, max_retries: 0, timeout: 10, retry_attempts: 0}\n"
        "stages: [{name: s, models: [openai/fake], eval_args: {limit: 2}}]\n"
    )
    args = [str(preset), "--task", "docket/context_qa", "--log-dir", url, "-o", str(tmp_path / "r")]

    def failing(request: dict[str, object]) -> tuple[int, dict[str, object]]:
        if prompt_text(request) == PROBE:
            return 200, completion("OK")
        return 500, error_body("CUDA out of memory", "server_error")

    with fake_openai(failing, None) as server:
        assert _suite([*args, "--base-url", server.base_url]) == 1
    [line] = [x for x in capsys.readouterr().out.splitlines() if "samples errored" in x]
    assert "2 of 2 samples errored" in line and line.endswith("the next run re-runs them")
    [first] = _store_headers(url).values()
    assert first.status == "error"
    with fake_openai(lambda _: (200, completion("ok")), None) as server:
        assert _suite([*args, "--base-url", server.base_url]) == 0
        asked = [prompt_text(r) for r in server.chats()]
    assert len(asked) == 3 and asked.count(PROBE) == 1  # the probe, then the two samples
    newest = max(_store_headers(url).values(), key=lambda h: h.eval.created)
    assert newest.status == "success" and newest.results.completed_samples == 2
