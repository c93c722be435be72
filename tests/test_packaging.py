"""The non-editable build ships every package folder and imports them from the wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: import name -> source folder, as mapped by pyproject's package-dir.
MAPPED_ROOTS = {
    "docket": "docket",
    "docket.agents": "agents",
    "docket.benchmarks": "benchmarks",
    "docket.methods": "methods",
    "docket.reports": "reports",
    "docket.sandboxes": "sandboxes",
}

COPY_IGNORE = (".git", ".venv", "build", "dist", "logs", "*.egg-info", "__pycache__", ".*_cache")


def source_packages() -> set[str]:
    """Every folder with an `__init__.py` under the mapped roots, as an import name."""
    names: set[str] = set()
    for import_name, folder in MAPPED_ROOTS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            names.add(".".join([import_name, *relative]))
    return names


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel from a copy of the tree (an in-tree build leaves egg-info behind)."""
    source = tmp_path_factory.mktemp("source") / "docket"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*COPY_IGNORE))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return next(out.glob("docket-*.whl"))


@pytest.mark.slow
def test_wheel_ships_every_package(wheel: Path) -> None:
    files = set(zipfile.ZipFile(wheel).namelist())
    shipped = {
        name.removesuffix("/__init__.py").replace("/", ".")
        for name in files
        if name.endswith("/__init__.py")
    }
    assert source_packages() <= shipped, sorted(source_packages() - shipped)


@pytest.mark.slow
def test_packages_import_from_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    """`pip install` the wheel (non-editable) into a fresh venv; dependencies come from ours."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = subprocess.run(
        [
            sys.executable,
            "-c",
            "import inspect_ai, os; print(os.path.dirname(inspect_ai.__path__[0]))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    Path(site, "zz_dependencies.pth").write_text(ours + "\n")
    modules = sorted(source_packages() | {"docket._registry"})
    script = (
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({site!r}), (name, module.__file__)\n"
        f"print('imported', len({modules!r}))\n"
    )
    result = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"imported {len(modules)}"


def test_core_import_does_not_pull_torch() -> None:
    script = (
        "import sys, docket._registry\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "False"]
