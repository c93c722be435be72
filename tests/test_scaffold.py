"""`docket new benchmark NAME`: six files and no other change; the new benchmark registers,
lists, runs on its reference policies and passes the registry, suite and list tests as written;
a refused name is one line and writes nothing."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docket.cli import main
from docket.scaffold import MAX_NAME, benchmark_files

ROOT = Path(__file__).resolve().parents[1]
COPY_IGNORE = (".git", ".venv", "build", "dist", "logs", "*.egg-info", "__pycache__", ".*_cache")
NAME = "starter_bench"
SIX = {
    f"benchmarks/{NAME}/__init__.py",
    f"benchmarks/{NAME}/{NAME}.py",
    f"benchmarks/{NAME}/reference.py",
    f"benchmarks/{NAME}/listing.yaml",
    f"benchmarks/{NAME}/README.md",
    f"tests/benchmarks/{NAME}/test_{NAME}.py",
}


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` (links not followed, caches left out) by path, with its sha256."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.endswith("_cache")]
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[path.relative_to(root).as_posix()] = digest
    return found


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A copy of the tree with `docket new benchmark NAME` run in it, and its files before."""
    copy = tmp_path_factory.mktemp("checkout") / "docket"
    shutil.copytree(ROOT, copy, symlinks=True, ignore=shutil.ignore_patterns(*COPY_IGNORE))
    before = snapshot(copy)
    assert main(["new", "benchmark", NAME, "--dir", str(copy)]) == 0
    return copy, before


def in_copy(copy: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in the copy, importing docket from it (not from this checkout)."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, *args],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_new_benchmark_is_six_files_and_no_other_change(
    checkout: tuple[Path, dict[str, str]],
) -> None:
    copy, before = checkout
    after = snapshot(copy)
    assert set(after) - set(before) == SIX
    assert {path: after[path] for path in before} == before  # nothing else written or changed
    assert set(benchmark_files(NAME)) == SIX


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Bad-name", "must be a lowercase Python identifier"),
        ("9lives", "must be a lowercase Python identifier"),
        ("_private", "must be a lowercase Python identifier"),
        ("class", "must be a lowercase Python identifier"),
        ("x" * (MAX_NAME + 1), f"at most {MAX_NAME} characters"),
        ("smoke", "smoke: benchmarks/smoke already exists"),
        ("presets", "presets: benchmarks/presets already exists"),
        ("erm_rag", "erm_rag: docket/erm_rag is already a registered task"),
        (NAME, f"{NAME}: benchmarks/{NAME} already exists"),
    ],
)
def test_a_refused_name_is_one_line_and_writes_nothing(
    checkout: tuple[Path, dict[str, str]],
    capsys: pytest.CaptureFixture[str],
    name: str,
    message: str,
) -> None:
    copy, _ = checkout
    before = snapshot(copy)
    assert main(["new", "benchmark", name, "--dir", str(copy)]) == 2
    out = capsys.readouterr().out
    assert out.startswith("error: ") and message in out and len(out.strip().splitlines()) == 1
    assert snapshot(copy) == before


def test_a_root_that_is_no_checkout_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "benchmark", "fine_name", "--dir", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "not a docket checkout" in out and len(out.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())


def test_the_code_it_writes_is_ruff_clean_at_the_longest_name(tmp_path: Path) -> None:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff not installed (pip install -e '.[dev]')")
    (tmp_path / "benchmarks" / "presets").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    name = "b" * MAX_NAME
    assert main(["new", "benchmark", name, "--dir", str(tmp_path)]) == 0
    config = ["--config", str(ROOT / "pyproject.toml")]
    for command in (["check", *config], ["format", "--check", *config]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "benchmarks", "tests"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_the_new_benchmark_passes_its_test_and_the_registry_suite_and_list_tests(
    checkout: tuple[Path, dict[str, str]],
) -> None:
    copy, _ = checkout
    registered = in_copy(
        copy, "-c", "import docket._registry as r; print(r.REGISTERED['task'][-1])"
    )
    assert registered.stdout.strip() == f"docket/{NAME}", registered.stderr[-2000:]
    page = in_copy(
        copy,
        "-c",
        "import sys; sys.path.insert(0, 'docs'); import hooks; print(hooks.tasks_page())",
    )
    assert f"::: docket.benchmarks.{NAME}.{NAME}.{NAME}\n" in page.stdout, page.stderr[-2000:]
    tests = [
        f"tests/benchmarks/{NAME}",
        "tests/test_registry.py",
        "tests/test_cli.py",
        "tests/test_suite.py",
        "tests/test_layers.py",
    ]
    # the registry tests, the listing and `docket list` tests, the suite presets' plans and
    # dry run, the import rule; not the suite's whole runs of docket/smoke
    chosen = (
        f"{NAME} or test_registry or list or api_preset or local_preset or offline_preset or "
        "dry_run or task_args or layers"
    )
    drift = in_copy(copy, "-m", "docket.benchmarks.readme_parameters", "--check")
    assert f"benchmarks/{NAME}/README.md" not in drift.stderr, drift.stderr[-2000:]
    assert "Traceback" not in drift.stderr, drift.stderr[-2000:]
    result = in_copy(copy, "-m", "pytest", "-v", "-p", "no:cacheprovider", *tests, "-k", chosen)
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-2000:]
    test_file = f"tests/benchmarks/{NAME}/test_{NAME}.py"
    for test in (
        f"{test_file}::test_reference_policies_score_exactly[{NAME}_oracle-1.0] PASSED",
        f"{test_file}::test_registered_listed_and_its_headline_declared PASSED",
        f"{test_file}::test_a_bad_argument_is_one_line PASSED",
        "tests/test_registry.py::test_registered_tasks_preset_plans_and_docket_list_come_from_"
        "the_listings PASSED",
        f"tests/test_registry.py::test_registered_name_resolves[task-docket/{NAME}] PASSED",
        f"tests/test_cli.py::test_each_benchmark_has_an_inspect_evals_style_listing[{NAME}] PASSED",
        "tests/test_cli.py::test_listed_versions_match_the_tasks PASSED",
        "tests/test_suite.py::test_offline_preset_binds_scripted_roles_and_reference_policies "
        "PASSED",
    ):
        assert test in out, test
