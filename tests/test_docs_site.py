"""The docs site builds with `mkdocs build --strict` (broken links, anchors and API references
fail) and its start page renders in headless Chromium with every section in its nav.

Skipped with one line where mkdocs (the `docs` extra) or chromium is missing; with `CI=true`
that line fails the test instead, so CI cannot pass without building the site. The screenshot
is kept as a CI artifact in build/artifacts/docs-start.png.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from docket._registry import REGISTERED
from tests.chromium import ARTIFACTS, CHROMIUM, run_chromium

ROOT = Path(__file__).resolve().parents[1]
#: The start page's nav, in order (mkdocs.yml).
SECTIONS = [
    "Start here",
    "Benchmarks",
    "Methods",
    "Use your own model server",
    "Run at scale",
    "CI gating",
    "Sandboxes and security",
    "Add a benchmark",
    "Add a method",
    "API reference",
]


def _missing() -> str | None:
    for module, package in (
        ("mkdocs", "mkdocs"),
        ("material", "mkdocs-material"),
        ("mkdocstrings_handlers", "mkdocstrings-python"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{package} not installed (pip install -e '.[docs]')"
    return None


def _skip_or_fail(problem: str | None) -> None:
    """Skip with `problem`; with CI=true, fail with it."""
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must build and check the docs site: {problem}", pytrace=False)
        pytest.skip(problem)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built with --strict into a temporary folder."""
    _skip_or_fail(_missing())
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return out


def test_every_readme_is_a_page(site: Path) -> None:
    for folder in ("benchmarks/anchor", "benchmarks/smoke", "methods/rl", "sandboxes"):
        assert (site / folder / "index.html").is_file(), folder
    for page in ("api/core", "api/sandboxes", "api/reports", "api/tasks"):
        html = (site / page / "index.html").read_text()
        assert 'class="doc doc-heading"' in html, page  # mkdocstrings rendered objects
    tasks = (site / "api" / "tasks" / "index.html").read_text()
    documented = set(re.findall(r'id="docket\.benchmarks\.[\w.]+\.(\w+)"', tasks))
    registered = {name.removeprefix("docket/") for name in REGISTERED["task"]}
    assert documented == registered  # every registered task, from docket/_registry.py


def test_start_page_renders_with_its_sections_in_chromium(site: Path, tmp_path: Path) -> None:
    _skip_or_fail(None if CHROMIUM else "chromium not installed (CI installs it)")
    url = (site / "index.html").resolve().as_uri()
    dom = run_chromium(tmp_path / "profile", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    title = re.search(r"<title>([^<]*)</title>", dom.stdout)
    assert title is not None and title.group(1) == "docket", title
    nav = re.search(r'<nav class="md-nav md-nav--primary".*?</nav>\s*</div>', dom.stdout, re.S)
    assert nav is not None
    labels = [
        " ".join(label.split())
        for label in re.findall(r"<(?:span|label)[^>]*md-ellipsis[^>]*>(.*?)</", nav.group(0), re.S)
    ]
    found = [section for section in SECTIONS if section in labels]
    assert found == SECTIONS, labels
    for readme in sorted((ROOT / "benchmarks").glob("*/README.md")) + sorted(
        (ROOT / "methods").glob("*/README.md")
    ):  # every benchmark and method has its page in the nav
        folder = readme.parent.relative_to(ROOT).as_posix()
        assert f'href="{folder}/"' in nav.group(0), folder

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "docs-start.png"
    shot.unlink(missing_ok=True)
    result = run_chromium(
        tmp_path / "profile", "--window-size=1280,1000", f"--screenshot={shot}", url
    )
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == (1280, 1000)
        rgb = image.convert("RGB").resize((128, 100))
        colours = rgb.getcolors(maxcolors=100_000)
    assert colours is not None and len(colours) > 50  # text, header and nav: not blank
    white = sum(n for n, c in colours if isinstance(c, tuple) and min(c) > 245)
    assert white < 0.9 * 128 * 100, "the start page is nearly all white"
