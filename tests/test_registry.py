"""Every name docket registers with Inspect resolves (Inspect only warns on import failure), and
the registered tasks, the suite presets' plans and `docket list` are built from the listings."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml

from docket import suite
from docket.agents.scripted.policy import load_policies
from docket.benchmarks import presets
from docket.benchmarks.presets import (
    benchmark_folders,
    listed_folders,
    listed_task_names,
    listed_tasks,
    listings,
    preset_names,
    task_functions,
)
from docket.cli import main
from docket.core.inspect_private import RegistryType, registry_lookup
from docket.suite import load_preset, plan, registered_tasks, suite_bindings


def test_entry_point_targets_the_registry_module() -> None:
    points = [p for p in entry_points(group="inspect_ai") if p.name == "docket"]
    assert [p.value for p in points] == ["docket._registry"]


def test_registry_module_imports_cleanly() -> None:
    importlib.import_module("docket._registry")


REGISTERED = importlib.import_module("docket._registry").REGISTERED


@pytest.mark.parametrize(
    ("kind", "name"), [(kind, name) for kind, names in REGISTERED.items() for name in names]
)
def test_registered_name_resolves(kind: RegistryType, name: str) -> None:
    assert registry_lookup(kind, name) is not None


def test_registered_tasks_preset_plans_and_docket_list_come_from_the_listings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = importlib.import_module("docket._registry")
    folders = benchmark_folders(vars(registry).values())
    assert REGISTERED["task"] == listed_task_names(folders)
    assert sorted(REGISTERED["task"]) == sorted(listed_tasks())
    assert registered_tasks() == REGISTERED["task"]
    for preset in preset_names():
        loaded = load_preset(preset)
        models = None if loaded.stages[0].models else ["openai/x"]  # local-server: --model
        planned = list(dict.fromkeys(p.task for p in plan(loaded, tmp_path, models=models)))
        assert planned == REGISTERED["task"], preset
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    listed_rows = [line.split("│")[1].strip() for line in out.splitlines() if "│ docket/" in line]
    # the tasks table first; the model-roles table names tasks again further down
    listed = [r for r in dict.fromkeys(listed_rows) if r in listed_tasks()]
    assert listed == REGISTERED["task"]


def test_a_new_listing_is_all_a_registered_folder_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder, listing in listings().items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "listing.yaml").write_text(yaml.safe_dump(listing))
    extra = {"tasks": [{"name": "docket/extra_a"}, {"name": "docket/extra_b"}]}
    for folder in ("zz_extra", "extra"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "listing.yaml").write_text(yaml.safe_dump(extra))
    (tmp_path / "no_listing").mkdir()  # a folder without a listing is no benchmark
    before = listed_folders()
    monkeypatch.setattr(presets, "BENCHMARKS", tmp_path)
    # the registry's order first; the folders it does not name follow, by name
    known = [folder for folder in presets.RUN_ORDER if folder in before]
    assert listed_folders() == known + sorted({*before, "extra", "zz_extra"} - set(known))
    names = extra_names(extra)
    assert listed_task_names(["extra", "zz_extra"]) == [*names, *names]
    assert [t for t in listed_task_names(listed_folders()) if t not in names] == REGISTERED["task"]
    assert set(names) <= set(listed_tasks())
    with pytest.raises(ModuleNotFoundError, match="docket.benchmarks.extra"):
        task_functions(["extra"])  # the registry imports every listed folder's task module


def extra_names(listing: dict[str, list[dict[str, str]]]) -> list[str]:
    return [t["name"] for t in listing["tasks"]]


def test_the_registry_imports_every_listed_folder_in_run_order() -> None:
    registry = importlib.import_module("docket._registry")
    assert benchmark_folders(vars(registry).values()) == listed_folders()
    assert set(listed_folders()) == {
        p.parent.name for p in presets.BENCHMARKS.glob("*/listing.yaml")
    }
    for name in REGISTERED["task"]:
        function = getattr(registry, name.removeprefix("docket/"))
        assert function.__module__ == presets.task_module(listed_tasks()[name]["benchmark"])


def test_a_listed_task_its_module_lacks_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = {"smoke": {"tasks": [{"name": "docket/smoke"}, {"name": "docket/nope"}]}}
    monkeypatch.setattr(presets, "listings", lambda: listed)
    message = "^benchmarks/smoke/listing.yaml lists docket/nope, which benchmarks/smoke/smoke.py"
    with pytest.raises(ImportError, match=message):
        task_functions(["smoke"])


def test_every_policy_a_listing_binds_is_registered() -> None:
    policies = load_policies()
    for task in REGISTERED["task"]:
        bindings = suite_bindings(task)
        for role, name in bindings.roles.items():
            assert name in policies, (task, role, name)
        for args in bindings.reference_policies:
            assert args["policy"] in policies, (task, args)


def test_a_malformed_suite_block_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = {"docket/smoke": {"name": "docket/smoke", "benchmark": "smoke", "suite": {"rols": {}}}}
    monkeypatch.setattr(suite, "listed_tasks", lambda: bad)
    with pytest.raises(suite.PresetError, match=r"^benchmarks/smoke/listing.yaml: docket/smoke: "):
        suite_bindings("docket/smoke")
