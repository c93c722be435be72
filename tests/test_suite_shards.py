"""`docket suite PRESET --shard I/N`: a deterministic, cost-balanced 1/N of the plan's units
(task x model x stage), and concurrent shard processes on one S3 store (SeaweedFS,
`tests/s3_support.py`) that produce the leaderboard one process does, a killed shard included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextvars import copy_context
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log

from docket.cli import main
from docket.core import logstore
from docket.suite import (
    PresetError,
    Shard,
    TaskPlan,
    expected_samples,
    load_preset,
    model_cost,
    plan,
    shard_plans,
    unit_costs,
    unit_owners,
)
from tests.s3_support import S3Store

#: Six units in one task and stage: three shards share its folder, two units each.
RATES = (0.0, 0.2, 0.4, 0.6, 1.0)
LIMIT = 6
#: Longest wait for a shard process to reach its kill point, and for one to finish.
DEADLINE_S = 120.0
#: Offline tasks with reference policies, roles and both stages (planning all takes seconds).
TASKS = ["docket/toy_math", "docket/toy_math_sar", "docket/anchor_audit", "docket/scsuff"]


@pytest.fixture(scope="module")
def offline_plans(tmp_path_factory: pytest.TempPathFactory) -> list[TaskPlan]:
    """The offline preset's plans of `TASKS`."""
    return plan(load_preset("offline"), tmp_path_factory.mktemp("logs"), tasks=TASKS)


def _preset(tmp_path: Path) -> Path:
    models = [
        f"{{model: docket/scripted, args: {{policy: toy_math_student, error_rate: {rate}}}}}"
        for rate in RATES
    ]
    models.append("{model: docket/scripted, args: {policy: toy_math_constant}}")
    path = tmp_path / "shards.yaml"
    path.write_text(
        "format: docket-suite/1\nname: shards\nlog_dir: logs\ntasks: [docket/toy_math]\n"
        "roles: scripted\neval_args: {retry_attempts: 1}\n"
        f"stages: [{{name: s, models: [{', '.join(models)}], eval_args: {{limit: {LIMIT}}}}}]\n"
    )
    return path


def test_a_shard_is_i_of_n_or_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert Shard.parse(" 2 / 3 ") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"
    for bad, message in [("0/3", "between 1 and N"), ("4/3", "between 1 and N"), ("x", "I/N")]:
        with pytest.raises(PresetError, match=message):
            Shard.parse(bad)
    assert main(["suite", "offline", "--shard", "3/2", "--dry-run"]) == 2
    out = capsys.readouterr().out
    assert out.strip() == "error: --shard 3/2: I must be between 1 and N"


def test_every_unit_runs_in_exactly_one_shard(
    offline_plans: list[TaskPlan], tmp_path: Path
) -> None:
    plans = offline_plans
    units = sorted((p.task, p.stage, m.label) for p in plans for m in p.models)
    again = plan(load_preset("offline"), tmp_path, tasks=TASKS)  # another process's plan
    for count in (1, 2, 3, 5, len(units) + 3):
        seen: list[tuple[str, str, str]] = []
        for index in range(1, count + 1):
            for item in shard_plans(plans, Shard(index, count)):
                seen += [(item.task, item.stage, m.label) for m in item.models]
                original = next(p for p in plans if (p.task, p.stage) == (item.task, item.stage))
                assert item.log_dir == original.log_dir  # the same folder as one process
                assert item.shared_dir == (len(item.models) < len(original.models))
        assert sorted(seen) == units, count
        assert unit_owners(plans, count) == unit_owners(again, count)  # deterministic
    # more shards than units: each unit its own shard, the rest empty (and no list of N loads)
    assert unit_owners(plans, 10**12) == unit_owners(plans, len(units))
    assert sorted(unit_owners(plans, len(units)).values()) == list(range(len(units)))


def test_shards_are_balanced_by_expected_cost(offline_plans: list[TaskPlan]) -> None:
    plans = offline_plans
    costs = unit_costs(plans)
    smollm2 = next(p for p in plans if p.stage == "smollm2")
    assert model_cost(smollm2.models[0]) == 50.0 and expected_samples(smollm2) == 1
    scripted = next(p for p in plans if p.task == "docket/toy_math" and p.stage == "scripted")
    assert model_cost(scripted.models[0]) == 1.0 and expected_samples(scripted) == 5
    for count in (2, 3, 4):
        loads = [0.0] * count
        for key, owner in unit_owners(plans, count).items():
            loads[owner] += costs[key]
        # greedy, costliest first: no shard exceeds the mean by more than the largest unit
        assert max(loads) - sum(loads) / count <= max(costs.values())


def test_dry_run_of_a_shard_names_its_share(capsys: pytest.CaptureFixture[str]) -> None:
    tasks = [flag for task in TASKS for flag in ("--task", task)]
    assert (
        main(["suite", "offline", "--shard", "2/3", "--dry-run", "--stage", "scripted", *tasks])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("shard 2/3: ") and "units (task x model x stage)" in lines[0]
    mine, total = (int(x) for x in lines[0].split(": ")[1].split(" units")[0].split(" of "))
    shown = sum(line.count("docket/scripted policy=") for line in lines[1:] if " on " in line)
    assert 0 < mine < total and shown >= mine


def _scores(report: Path) -> dict[str, dict[str, Any]]:
    """The scores of the leaderboard JSON: per row model, what no log path or clock changes."""
    data = json.loads((report / "leaderboard.json").read_text())
    keys = ("value", "ci_low", "ci_high", "n", "rank", "metrics", "categories", "health")
    rows = {}
    for benchmark in data["benchmarks"]:
        for table in benchmark["tables"]:
            for entry in table["entries"]:
                assert entry["model"] not in rows  # every unit once
                rows[entry["model"]] = {k: entry[k] for k in keys}
    return rows


def _suite_process(preset: Path, log_dir: str, shard: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "docket.cli", "suite", str(preset), "--log-dir", log_dir]
    return subprocess.Popen(
        [*command, "--shard", shard, "--display", "none"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "INSPECT_LOG_LEVEL": "warning"},
    )


def _headers(log_dir: str, seen: dict[str, Any] | None = None) -> list[Any]:
    """The header of every log in the store (a log mid-upload is not listed); `seen` keeps the
    headers already read by URL, for a log that will not change (a poll)."""
    seen = {} if seen is None else seen
    found = logstore.find_logs(log_dir)
    with tempfile.TemporaryDirectory() as folder:
        fresh = [url for url in found if url not in seen]
        for url, path in logstore.download(fresh, log_dir, Path(folder)).items():
            seen[url] = read_eval_log(str(path), header_only=True)
    return [seen[url] for url in found]


def _label(header: Any) -> str:
    args = header.eval.model_args or {}
    return " ".join([header.eval.model, *(f"{k}={v}" for k, v in sorted(args.items()))])


def test_concurrent_shards_on_s3_match_one_process_even_when_one_is_killed(
    s3_env: S3Store, tmp_path: Path
) -> None:
    """One process (on the local disk), then two concurrent shard processes into one folder of
    the store; the second is SIGKILLed once it has started its units, the first finishes; the
    store then counts none of the killed shard's units; re-running that shard resumes them; the
    leaderboard's scores are then those of the single process, every unit once."""
    preset = _preset(tmp_path)
    single, sharded = str(tmp_path / "single"), s3_env.url("sharded")
    run = ["suite", str(preset), "--log-dir", single, "--display", "none"]
    assert copy_context().run(main, [*run, "-o", str(tmp_path / "single-report")]) == 0
    expected = _scores(tmp_path / "single-report")
    assert len(expected) == len(RATES) + 1
    assert expected["docket/scripted error_rate=0.0 policy=toy_math_student"]["value"] == 1.0
    assert expected["docket/scripted policy=toy_math_constant"]["value"] == 0.0

    owners = unit_owners(plans := plan(load_preset(str(preset)), sharded), 2)
    victims = {plans[i].models[j].label for (i, j), owner in owners.items() if owner == 1}
    assert len(victims) == 3  # six units, balanced
    workers = [_suite_process(preset, sharded, f"{i}/2") for i in (1, 2)]
    seen: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not any(_label(h) in victims for h in _headers(sharded, seen)):
            assert workers[1].poll() is None, workers[1].communicate()[0].decode()[-3000:]
            assert time.monotonic() < deadline, "the shard never wrote a log"
            time.sleep(0.2)
        workers[1].send_signal(signal.SIGKILL)
        output = workers[0].communicate(timeout=DEADLINE_S)[0].decode()
        assert workers[0].returncode == 0, output[-3000:]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=30)
    assert workers[1].returncode == -signal.SIGKILL
    killed = [h for h in _headers(sharded) if _label(h) in victims]
    assert killed and all(h.status == "started" for h in killed)  # died mid-run

    # nothing half-counted: the killed shard's units are unscored, every other row is whole
    assert main(["report", sharded, "-o", str(tmp_path / "partial")]) == 0
    partial = _scores(tmp_path / "partial")
    assert partial == {k: v for k, v in expected.items() if k not in victims}
    unscored = json.loads((tmp_path / "partial" / "leaderboard.json").read_text())["unscored"]
    assert {u["model"] for u in unscored} <= victims
    assert all(u["reason"] == "status started" for u in unscored)

    rerun = ["suite", str(preset), "--log-dir", sharded, "--shard", "2/2", "--display", "none"]
    assert copy_context().run(main, rerun) == 0  # resumes the killed shard's units
    assert main(["report", sharded, "-o", str(tmp_path / "sharded-report")]) == 0
    assert _scores(tmp_path / "sharded-report") == expected
    finished = [h for h in _headers(sharded) if h.status == "success"]
    assert sorted(_label(h) for h in finished) == sorted(expected)  # one log per unit


def test_a_log_gone_before_it_is_settled_is_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from inspect_ai.log import EvalLog

    from docket.suite import _settle

    item = SimpleNamespace(eval_args={}, task="docket/toy_math", stage="scripted")
    gone = EvalLog.model_construct(location=str(tmp_path / "replaced.eval"))
    assert _settle(item, [gone]) == []  # type: ignore[arg-type]
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("warning: ") and "gone before its errored samples were settled" in line
