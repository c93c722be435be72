"""MkDocs hooks: the repository's Markdown joins the docs site in place.

Every README (and the other Markdown beside them) is read where it lives, under its repository
path (`benchmarks/anchor/README.md` is the page `benchmarks/anchor/`), so the relative links
between them resolve on the site exactly as they do in the repository, and a change to a README
is the site's change with no copy to keep in step. A nav entry whose value is a glob
(`benchmarks/*/README.md`) expands to one page per match, titled from the benchmark's
`listing.yaml` or the folder's name, skipping pages the nav names elsewhere. The API page of
the benchmarks' tasks (`api/tasks.md`) is written from the listings, the ones `docket._registry`
registers, so a new benchmark's tasks appear with no change here.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from docket.benchmarks.presets import listed_folders, listings, task_module

ROOT = Path(__file__).resolve().parent.parent
# Repository Markdown published in place; the top README is not (docs/pages/index.md is the
# start page, written for the site).
IN_PLACE = [
    "CONTRIBUTING.md",
    "docs/*.md",
    "agents/**/*.md",
    "benchmarks/**/*.md",
    "methods/**/*.md",
    "sandboxes/**/*.md",
    "reports/**/*.md",
    "docket/core/**/*.md",
]


def in_place_pages() -> list[str]:
    """Repository-relative paths of the Markdown files the site reads in place."""
    found: set[str] = set()
    for pattern in IN_PLACE:
        for path in glob.glob(pattern, root_dir=ROOT, recursive=True):
            found.add(Path(path).as_posix())
    return sorted(found)


def tasks_page() -> str:
    """`api/tasks.md`: one mkdocstrings block per listed task, as `docket._registry` registers
    them (each benchmark's `listing.yaml`, its tasks in `benchmarks/<b>/<b>.py`)."""
    found = listings()
    blocks = [
        f"::: {task_module(folder)}.{str(entry['name']).removeprefix('docket/')}\n"
        for folder in listed_folders()
        for entry in found[folder].get("tasks") or []
    ]
    intro = "Every task registered as `docket/<name>`; its parameters are its `-T` options.\n"
    return "\n".join(["# Benchmark tasks\n", intro, *blocks])


def nav_title(path: str) -> str:
    """A short nav title: a benchmark's listing title up to its colon, else the folder's name."""
    listing = ROOT / Path(path).parent / "listing.yaml"
    if listing.is_file():
        title = yaml.safe_load(listing.read_text()).get("title")
        if title:
            return str(title).split(":")[0].strip()
    return Path(path).parent.name


def _named(nav: Any) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return set().union(*(_named(item) for item in nav)) if nav else set()
    if isinstance(nav, dict):
        return set().union(*(_named(value) for value in nav.values())) if nav else set()
    return set()


def _expand(nav: Any, named: set[str]) -> Any:
    if isinstance(nav, list):
        return [_expand(item, named) for item in nav]
    if isinstance(nav, dict):
        out = {}
        for title, value in nav.items():
            if isinstance(value, str) and "*" in value:
                matches = sorted(glob.glob(value, root_dir=ROOT))
                value = [{nav_title(m): m} for m in matches if m not in named]
                if not value:
                    raise ValueError(f"mkdocs.yml nav {title!r}: {nav[title]!r} matches no page")
            out[title] = _expand(value, named)
        return out
    return nav


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Expand the nav's glob entries into one page per matching file."""
    nav = config.nav
    config.nav = _expand(nav, {n for n in _named(nav) if "*" not in n})
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the repository's Markdown under its own path, read from where it lives, and the
    API page of the benchmarks' tasks."""
    for path in in_place_pages():
        files.append(File(path, str(ROOT), config.site_dir, config.use_directory_urls))
    files.append(File.generated(config, "api/tasks.md", content=tasks_page()))
    return files
