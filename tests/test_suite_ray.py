"""`docket suite PRESET --executor ray`: the units as Ray tasks on a real two-node cluster
(`tests/ray_support.py`), the worker node killed mid-run, the leaderboard that of one process;
the endpoint cap measured at the server; the one-line errors; the cap's bookkeeping.

The cluster run's models are `openai/` models on a local OpenAI-compatible server
(`tests/fake_openai.py`) that answers toy_math by model name and waits before each answer, so
units last long enough to be killed, and counts the calls in flight per model.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import copy_context
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log, read_eval_log_sample_summaries
from rich.console import Console

from docket import ray_executor
from docket.benchmarks.toy_math.reference import parse_question
from docket.cli import main
from docket.ray_executor import (
    DEFAULT_CAP,
    Board,
    Coordinator,
    EndpointSlots,
    Unit,
    endpoint_caps,
    endpoint_key,
    forwarded_env,
    plan_units,
)
from docket.suite import ModelSpec, TaskPlan, load_preset, plan, task_sandbox, unit_costs
from tests.fake_openai import FakeServer, closed_port, completion, fake_openai, prompt_text
from tests.ray_support import RayCluster, two_node_cluster

ROOT = Path(__file__).resolve().parents[1]
#: Seconds the server waits before each answer, and the calls in flight per endpoint.
DELAY_S = 0.6
CAP = 2
#: Longest wait for the driver to reach a point of the run.
DEADLINE_S = 150.0


# --- the cap's bookkeeping, without Ray ------------------------------------------------------


async def _calls(slots: EndpointSlots, count: int, seconds: float) -> int:
    """`count` concurrent calls through `slots`; the most in flight at once, measured."""
    inside, peak = 0, 0

    async def call(index: int) -> None:
        nonlocal inside, peak
        assert await slots.acquire(f"h{index % 3}", f"t{index}")
        inside += 1
        peak = max(peak, inside)
        await asyncio.sleep(seconds)
        inside -= 1
        slots.release(f"t{index}")

    await asyncio.gather(*(call(i) for i in range(count)))
    return peak


def test_never_more_than_the_cap_in_flight() -> None:
    for cap in (1, 2, 5):
        slots = EndpointSlots(cap)
        assert asyncio.run(_calls(slots, 12, 0.01)) == cap
        assert slots.peak == cap and not slots.held and not slots.waiting
    assert asyncio.run(_calls(EndpointSlots(20), 12, 0.01)) == 12  # a cap above demand: all


def test_a_call_that_gives_up_never_leaks_its_slot() -> None:
    async def scenario() -> None:
        slots = EndpointSlots(1)
        assert await slots.acquire("a", "t1")
        waiter = asyncio.ensure_future(slots.acquire("b", "t2"))
        await asyncio.sleep(0)
        slots.release("t2", "b")  # b gave up while waiting
        assert await waiter is False
        slots.release("t3", "c")  # c's release overtook its acquire
        assert await slots.acquire("c", "t3") is False
        slots.release("t1", "a")
        assert not slots.held and not slots.withdrawn
        assert await slots.acquire("d", "t4") and slots.held == {"t4": "d"}

    asyncio.run(scenario())


def test_a_dead_attempt_s_slots_are_freed_by_its_retry_or_its_lease() -> None:
    now = [0.0]

    async def scenario() -> None:
        coordinator = Coordinator({"e": 1}, lease_s=30, clock=lambda: now[0])
        await coordinator.started("0.0", "first", "node-a")
        assert await coordinator.acquire("e", "first", "t1")
        waiter = asyncio.ensure_future(coordinator.acquire("e", "other", "t2"))
        await asyncio.sleep(0)
        assert not waiter.done()
        await coordinator.started("0.0", "second", "node-b")  # Ray retried the unit
        assert await waiter and (await coordinator.stats())["e"] == (1, 1, 1)
        await coordinator.release("e", "other", "t2")
        # a holder that stops sending heartbeats loses its slots after the lease
        assert await coordinator.acquire("e", "second", "t3")
        now[0] = 20.0
        await coordinator.heartbeat("second")
        now[0] = 45.0
        assert coordinator.reap() == ["other"]  # 45 s since its last call; "second" beat at 20
        assert (await coordinator.stats())["e"][1] == 1
        now[0] = 51.0
        assert coordinator.reap() == ["second"]
        assert (await coordinator.stats())["e"][1] == 0
        events = await coordinator.drain()
        assert events == [("0.0", "first", "node-a"), ("0.0", "second", "node-b")]
        assert await coordinator.drain() == []

    asyncio.run(scenario())


# --- planning ---------------------------------------------------------------------------------


def _cap_preset(tmp_path: Path, base_url: str = "http://127.0.0.1:9/v1", limit: int = 6) -> Path:
    """toy_math on `openai/` models of one server: `right` in two stages (distinct model args:
    two units on one endpoint; stage b's own `max_connections` is twice `CAP`), `wrong` and
    `half` in stage a; `CAP` calls in flight elsewhere."""

    def spec(name: str, timeout: int = 60) -> str:
        return (
            f"{{model: openai/{name}, base_url: '{base_url}', args: {{client_timeout: {timeout}}}}}"
        )

    path = tmp_path / "ray.yaml"
    path.write_text(
        "format: docket-suite/1\nname: ray\nlog_dir: logs\ntasks: [docket/toy_math]\n"
        f"roles: scripted\neval_args: {{max_connections: {CAP}, retry_attempts: 1, "
        "log_buffer: 1}\n"
        "stages:\n"
        f"  - {{name: b, models: [{spec('right', 61)}], "
        f"eval_args: {{limit: {limit * 2}, max_connections: {2 * CAP}}}}}\n"
        f"  - {{name: a, models: [{spec('right')}, {spec('wrong')}, {spec('half')}], "
        f"eval_args: {{limit: {limit}}}}}\n"
    )
    return path


def test_units_are_the_shards_units_costliest_first(tmp_path: Path) -> None:
    plans = plan(load_preset(str(_cap_preset(tmp_path))), tmp_path / "logs")
    units = plan_units(plans, largest_node=4)
    costs = unit_costs(plans)
    assert sorted(u.key for u in units) == sorted(costs)  # every unit once
    assert [u.cost for u in units] == sorted(costs.values(), reverse=True)
    first = units[0]
    assert (first.item.stage, first.item.models[0].label) == (
        "b",
        "openai/right client_timeout=61 responses_api=False",
    )
    assert first.item.shared_dir is False and units[1].item.shared_dir is True
    assert all(u.cpus == 1 and len(u.item.models) == 1 for u in units)
    right = endpoint_key(first.item.models[0])
    assert right == "openai/right @ http://127.0.0.1:9/v1"
    assert endpoint_caps(plans) == {
        right: CAP,
        right.replace("right", "wrong"): CAP,
        right.replace("right", "half"): CAP,
    }
    assert plans[0].eval_args["max_connections"] == 2 * CAP  # the smallest of the plans
    assert endpoint_caps(plans[:1])[right] == 2 * CAP
    plans[0].eval_args.pop("max_connections")
    assert endpoint_caps(plans[:1])[right] == DEFAULT_CAP  # Inspect's when none is set
    # a time budget keeps the stages' order
    assert [u.item.stage for u in plan_units(plans, 4, by_stage=True)] == ["b", "a", "a", "a"]


def test_a_sandboxed_unit_reserves_cpus_for_its_sandboxes(tmp_path: Path) -> None:
    [item] = plan(load_preset("offline"), tmp_path, tasks=["docket/smoke"], stages=["scripted"])
    assert task_sandbox(item) == "bwrap"
    assert ray_executor.unit_cpus(item, 8) == 2
    item.eval_args["max_sandboxes"] = 4
    assert ray_executor.unit_cpus(item, 8) == 5 and ray_executor.unit_cpus(item, 3) == 3
    item.task_args["sandbox"] = "k8s"  # the agents' pods run elsewhere
    assert ray_executor.unit_cpus(item, 8) == 1
    [plain] = plan(load_preset("offline"), tmp_path, tasks=["docket/toy_math"], stages=["scripted"])
    assert task_sandbox(plain) is None and ray_executor.unit_cpus(plain, 8) == 1


def test_the_units_get_the_driver_s_keys_and_settings() -> None:
    env = {"AWS_ENDPOINT_URL": "u", "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "b", "HOME": "/h"}
    env |= {"INSPECT_LOG_LEVEL": "warning", "PATH": "/bin"}
    assert forwarded_env(env) == {k: env[k] for k in env if k not in ("HOME", "PATH")}


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_lines_escape_control_characters(terminal: bool) -> None:
    console = Console(file=io.StringIO(), record=True, width=300, force_terminal=terminal)
    model = ModelSpec(model="docket/scripted", args={"policy": "p\x1b[2J"})
    item = TaskPlan(task="docket/x", stage="s", models=[model], roles={}, log_dir=Path("."))
    unit = Unit(key=(0, 0), item=item, cost=1.0, cpus=1.0)
    board = Board(console, 2)
    with board:  # a rich bar on a terminal, plain lines otherwise
        board.start(unit, "0123456789abcdef")
        board.start(unit, "fedcba9876543210")
        board.say("ray: \x1b[33m(raylet)\x1b[0m Task failed")
        board.finish(unit, False, 1.0, ["boom\x1b]0;title\x07"])
    text = console.export_text(styles=False)
    assert "started again (attempt 2): docket/x / s / docket/scripted policy=p\\x1b[2J" in text
    assert "ray: \\x1b[33m(raylet)\\x1b[0m Task failed" in text
    assert "boom\\x1b]0;title\\x07" in text and "\x07" not in text
    if not terminal:
        assert "\x1b" not in text
    assert board.summary() == "0/2 done, 0 running, 1 failed, 1 retried"


def test_ray_s_notices_and_errors_are_one_line_each() -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'docket[ray]')")
    import ray._private.worker as ray_worker
    from ray.exceptions import RayTaskError, WorkerCrashedError

    said: list[str] = []
    original = ray_worker.print_to_stdstream
    with ray_executor._ray_notices(said.append):
        ray_worker.print_to_stdstream(
            {"lines": ["\x1b[33m(raylet)\x1b[0m Task failed.\nmore", ""], "pid": "raylet"}, False
        )
    assert ray_worker.print_to_stdstream is original
    assert said == ["ray: \x1b[33m(raylet)\x1b[0m Task failed."]  # Board.say escapes it
    lost = ray_executor.unit_error(WorkerCrashedError())
    assert lost.startswith("lost after 3 retries: WorkerCrashedError: The worker died")
    raised = RayTaskError("run_unit", "Traceback ...", ValueError("bad input\ndetail"))
    assert ray_executor.unit_error(raised) == "raised ValueError: bad input"


# --- one line and exit 2 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ray-address", "127.0.0.1:6379"], "--ray-address needs --executor ray"),
        (["--executor", "ray", "--shard", "1/2"], "drop --shard"),
        (["--executor", "ray", "--emit-flow", "x.py"], "--emit-flow writes a spec"),
        (["--executor", "ray", "--ray-address", "ray://h:1"], "expected HOST:PORT"),
        (["--executor", "ray", "--ray-address", "h:99999"], "expected HOST:PORT"),
    ],
)
def test_bad_ray_flags_are_one_line(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["suite", "offline", "--task", "toy_math", "--dry-run", *flags]) == 2
    out = capsys.readouterr().out.strip()
    assert out.startswith("error: ") and message in out and "\n" not in out


def test_an_unreachable_cluster_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'docket[ray]')")
    port = closed_port()
    started = time.monotonic()
    args = ["suite", "offline", "--task", "toy_math", "--executor", "ray"]
    assert main([*args, "--ray-address", f"127.0.0.1:{port}"]) == 2
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"error: --ray-address 127.0.0.1:{port}: nothing answers there")
    assert "\n" not in out and time.monotonic() - started < 30


def test_ray_not_installed_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    assert main(["suite", "offline", "--task", "toy_math", "--executor", "ray"]) == 2
    out = capsys.readouterr().out.strip()
    assert out == "error: --executor ray needs ray (pip install 'docket[ray]')"


# --- a real two-node cluster --------------------------------------------------------------------


class Answers:
    """The server's side: toy_math answers by model name, and the calls in flight per model."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.calls: dict[str, int] = {}

    def reset(self) -> None:
        with self.lock:
            self.inside.clear()
            self.peak.clear()
            self.calls.clear()

    def arrive(self, request: dict[str, Any]) -> float:
        model = str(request.get("model"))
        with self.lock:
            self.inside[model] = self.inside.get(model, 0) + 1
            self.peak[model] = max(self.peak.get(model, 0), self.inside[model])
            self.calls[model] = self.calls.get(model, 0) + 1
        return DELAY_S

    def respond(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        model = str(request.get("model"))
        with self.lock:
            self.inside[model] -= 1
        chain = parse_question(prompt_text(request))
        if chain is None:  # the endpoint probe
            return 200, completion("ok")
        right = model == "right" or (model == "half" and chain.start % 2 == 0)
        return 200, completion(f"ANSWER: {chain.answer if right else chain.answer + 1}")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeServer, Answers]]:
    answers = Answers()
    with fake_openai(answers.respond, answers.arrive) as found:
        yield found, answers


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    with two_node_cluster(env) as found:
        yield found


def _scores(report: Path) -> dict[str, dict[str, Any]]:
    """The leaderboard's scores per (benchmark table, model), each row once."""
    data = json.loads((report / "leaderboard.json").read_text())
    keys = ("value", "ci_low", "ci_high", "n", "rank", "metrics", "categories", "health")
    rows: dict[str, dict[str, Any]] = {}
    for benchmark in data["benchmarks"]:
        for table in benchmark["tables"]:
            for entry in table["entries"]:
                key = f"{table['task']} | {entry['model']}"
                assert key not in rows  # every unit once
                rows[key] = {k: entry[k] for k in keys}
    return rows


def _lines(process: subprocess.Popen[str], into: list[str]) -> threading.Thread:
    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            into.append(line.rstrip("\n"))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _wait(
    condition: Callable[[], bool], what: str, process: subprocess.Popen[str], out: list[str]
) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert process.poll() is None, f"the driver ended before {what}:\n" + "\n".join(out[-40:])
        assert time.monotonic() < deadline, f"no {what}:\n" + "\n".join(out[-40:])
        time.sleep(0.1)


def _label(header: Any) -> str:
    args = header.eval.model_args or {}
    return " ".join([header.eval.model, *(f"{k}={v}" for k, v in sorted(args.items()))])


def _unit_log(folder: Path, label: str) -> tuple[str, int] | None:
    """The log of model `label` in `folder` and how many samples it holds (None: none yet)."""
    if not folder.exists():
        return None
    for info in list_eval_logs(str(folder)):
        try:
            header = read_eval_log(info, header_only=True)
            if _label(header) == label:
                return info.name, len(read_eval_log_sample_summaries(info))
        except Exception:  # noqa: BLE001 - a log being written
            continue
    return None


@pytest.mark.slow
def test_worker_node_lost_mid_run_and_the_leaderboard_is_one_process_s(
    cluster: RayCluster,
    server: tuple[FakeServer, Answers],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One process runs the preset; then the driver runs it on the two-node cluster: once a
    unit on the worker node has begun its eval and its model is answering, the worker node is
    killed (raylet and everything under it). Ray retries that unit on the head, which resumes it
    from its log; the run ends 0 with the one-process leaderboard (every score and n, each row
    once) and one finished log per unit. The server measures the endpoint cap: one process sends
    `right` 2 x CAP calls at once (stage b's own max_connections), the cluster never more than
    CAP, the smallest max_connections of the plans that call it."""
    fake, answers = server
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("INSPECT_LOG_LEVEL", "warning")
    preset = _cap_preset(tmp_path, fake.base_url)
    single = ["suite", str(preset), "--log-dir", str(tmp_path / "single"), "--display", "none"]
    started = time.monotonic()
    assert copy_context().run(main, [*single, "-o", str(tmp_path / "single-report")]) == 0
    single_s = time.monotonic() - started
    expected = _scores(tmp_path / "single-report")
    values = {k.split(" | ")[1]: v["value"] for k, v in expected.items()}
    assert values["openai/right client_timeout=60 responses_api=False"] == 1.0
    assert values["openai/wrong client_timeout=60 responses_api=False"] == 0.0
    assert 0.0 < values["openai/half client_timeout=60 responses_api=False"] < 1.0
    assert answers.peak["right"] == 2 * CAP  # what one uncapped unit sends at once
    answers.reset()

    logs, report = tmp_path / "ray", tmp_path / "ray-report"
    command = [sys.executable, "-m", "docket.cli", "suite", str(preset), "--log-dir", str(logs)]
    command += ["--executor", "ray", "--ray-address", cluster.address, "-o", str(report)]
    out: list[str] = []
    started = time.monotonic()
    driver = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ
    )
    reader = _lines(driver, out)
    try:
        worker = cluster.worker_node[:8]
        found: list[str] = []

        def on_worker() -> bool:
            found[:] = [
                line.split("started: ", 1)[1].rsplit(" on node ", 1)[0]
                for line in list(out)
                if line.startswith("started: ") and line.endswith(f" on node {worker}")
            ]
            return bool(found)

        _wait(on_worker, "unit on the worker node", driver, out)
        victim = found[0]
        task, stage, label = victim.split(" / ")
        folder = logs / task.replace("/", "_") / stage
        flushed: list[tuple[str, int]] = []

        def samples_logged() -> bool:  # the worker's unit has finished samples, not all
            found = _unit_log(folder, label)
            flushed[:] = [found] if found else []
            return bool(found and found[1] >= 2)

        _wait(samples_logged, "samples logged by the worker's unit", driver, out)
        assert f"done: {victim}" not in "\n".join(out)  # mid-run
        assert cluster.kill_worker_node()
        killed_s = time.monotonic() - started
        driver.wait(timeout=DEADLINE_S)
        reader.join(timeout=10)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=30)
    ray_s = time.monotonic() - started
    text = "\n".join(out)
    assert driver.returncode == 0, text[-4000:]
    assert f"started again (attempt 2): {victim} on node {cluster.head_node[:8]}" in text, text
    assert "ray: 4/4 done, 0 running, 0 failed, 1 retried" in text, text
    assert "\x1b" not in text

    assert _scores(report) == expected  # identical scores and n, each row once
    headers = [
        read_eval_log(i, header_only=True) for i in list_eval_logs(str(logs), recursive=True)
    ]
    done = sorted(
        (_label(h), h.results.total_samples)
        for h in headers
        if h.status == "success" and h.results is not None
    )
    assert done == [
        ("openai/half client_timeout=60 responses_api=False", 6),
        ("openai/right client_timeout=60 responses_api=False", 6),
        ("openai/right client_timeout=61 responses_api=False", 12),
        ("openai/wrong client_timeout=60 responses_api=False", 6),
    ]
    # the retry resumed the killed attempt's log: its finished samples are reused, not rerun
    [(name, _)] = flushed
    killed = read_eval_log(name)
    assert killed.status == "started" and killed.samples and len(killed.samples) >= 2
    [final] = [h for h in headers if h.status == "success" and _label(h) == label]
    kept = read_eval_log(final.location).samples or []
    assert len({s.id for s in kept}) == len(kept) == (12 if stage == "b" else 6)
    assert {s.uuid for s in killed.samples} <= {s.uuid for s in kept}
    assert max(answers.peak.values()) <= CAP and answers.peak["right"] == CAP  # at the server
    print(
        f"\none process {single_s:.1f} s; two-node Ray run {ray_s:.1f} s "
        f"(worker node killed at {killed_s:.1f} s)"
    )
