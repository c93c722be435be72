"""The `docket` console script: list, exit codes and flag validation."""

from __future__ import annotations

import importlib
import math
import re
from pathlib import Path

import pytest
import yaml

from docket import __version__
from docket.benchmarks.presets import listed_tasks, listings
from docket.cli import main


def test_list_shows_tasks_with_version_and_description_and_the_providers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    registry = importlib.import_module("docket._registry")
    for task in registry.REGISTERED["task"]:
        assert task in out
    assert re.search(r"docket/smoke\s*│\s*1-B\s*│\s*smoke", out)
    assert "Create files with tools inside the sandbox." in out
    for provider in ("docket/scripted", "docket/smollm2", "docket/local", "docket/bwrap"):
        assert provider in out
    assert "docket/docket" not in out
    for name in ("comply", "refuse", "offline", "api"):
        assert name in out


def test_every_registered_task_is_listed_once_with_a_version() -> None:
    registry = importlib.import_module("docket._registry")
    listed = listed_tasks()
    assert sorted(listed) == sorted(registry.REGISTERED["task"])
    for name, entry in listed.items():
        assert str(entry["version"]).count("-") == 1, name


@pytest.mark.parametrize("folder", sorted(listings()))
def test_each_benchmark_has_an_inspect_evals_style_listing(folder: str) -> None:
    root = Path(__file__).resolve().parents[1] / "benchmarks" / folder
    data = yaml.safe_load((root / "listing.yaml").read_text())
    for key in ("title", "description", "paper", "tags", "tasks", "changelog"):
        assert key in data, (folder, key)
    assert data["tags"] and all(t == t.lower() for t in data["tags"])
    versions = {t["version"] for t in data["tasks"]}
    assert versions <= {c["version"] for c in data["changelog"]}, folder
    assert (root / "README.md").is_file()


def test_listed_versions_match_the_tasks() -> None:
    """listing.yaml must follow a version bump of the task (the task is built, not run)."""
    registry = importlib.import_module("docket._registry")
    for name, entry in listed_tasks().items():
        built = getattr(registry, name.split("/", 1)[1])()
        assert built.version == entry["version"], name


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_report_on_an_empty_log_dir_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()
    assert main(["report", str(tmp_path / "logs"), "-o", str(tmp_path / "out")]) == 2
    out = capsys.readouterr().out
    assert "no Inspect logs" in out and len(out.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tolerance", "-1"], "--tolerance must be >= 0"),
        (["--min-coverage", "1.5"], "--min-coverage in [0, 1]"),
        (["--headline", "nope"], "expected TASK=METRIC:DIRECTION"),
    ],
)
def test_regress_rejects_bad_flags_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["regress", "--baseline", "b.json", "--logs", str(tmp_path), *args]) == 2
    out = capsys.readouterr().out
    assert message in out and len(out.strip().splitlines()) == 1


def test_regress_without_a_baseline_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gate_log_dir: Path
) -> None:
    missing = tmp_path / "missing.json"
    assert main(["regress", "--baseline", str(missing), "--logs", str(gate_log_dir)]) == 2
    assert "missing.json: baseline file not found" in capsys.readouterr().out


def test_write_baseline_from_no_logs_exits_2(tmp_path: Path) -> None:
    base = tmp_path / "b.json"
    args = ["regress", "--baseline", str(base), "--logs", str(tmp_path), "--write-baseline"]
    assert main(args) == 2
    assert not base.exists()


@pytest.fixture(scope="module")
def gate_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Any readable log (docket/smoke on the scripted refuse policy, one sample)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from docket.benchmarks.smoke.smoke import smoke

    folder = tmp_path_factory.mktemp("logs")
    inspect_eval(
        smoke(),
        model=get_model("docket/scripted", policy="refuse"),
        log_dir=str(folder),
        display="none",
        limit=1,
    )
    return folder


def test_suite_warns_before_a_limit_that_cannot_detect_the_preset_tolerance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["suite", "offline", "--task", "docket/smoke", "--dry-run", "--log-dir", str(tmp_path)]
    assert main([*args, "--limit", "71"]) == 0
    out = capsys.readouterr().out
    floor = math.ceil(math.log(0.025) / math.log(0.95))  # no discordant pair bounds the drop
    assert floor == 72
    assert (
        "warning: --limit 71 cannot detect preset offline's tolerance 0.05: at alpha 0.05 even "
        "an unchanged 0/1 headline needs 72 samples per task to pass `docket regress`"
    ) in out
    assert main([*args, "--limit", "72"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_every_listed_role_says_what_it_does_and_when_an_optional_one_is_used() -> None:
    for name, entry in listed_tasks().items():
        helps = entry.get("role_help") or {}
        roles = [*(entry.get("roles") or []), *(entry.get("optional_roles") or [])]
        assert sorted(helps) == sorted(roles), name  # no role without its sentence, none extra
        assert set(entry.get("optional_when") or {}) <= set(entry.get("optional_roles") or []), name


def test_list_shows_each_tasks_roles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in capsys.readouterr().out.splitlines()
        if line.count("│") == 5
    ]
    needed = ("required", "optional")
    roles = {
        (r[0], r[1]): r[2] for r in rows if r[0].startswith("docket/") and r[2].startswith(needed)
    }
    assert roles[("docket/anchor_direct", "judge")] == "required"
    assert roles[("docket/anchor_direct", "emulator")] == "optional, used with -T emulator=true"
    assert roles[("docket/scsuff", "generator")] == "required"
    expected = {
        (name, str(role))
        for name, entry in listed_tasks().items()
        for role in [*(entry.get("roles") or []), *(entry.get("optional_roles") or [])]
    }
    assert set(roles) == expected
