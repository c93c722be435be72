"""Package discovery for the card's layout: every folder with an `__init__.py` under the mapped
roots ships as `docket.<root>.<...>` (pyproject.toml holds everything else)."""

from pathlib import Path

from setuptools import setup

ROOTS = {
    "docket": "docket",
    "docket.agents": "agents",
    "docket.benchmarks": "benchmarks",
    "docket.methods": "methods",
    "docket.reports": "reports",
    "docket.sandboxes": "sandboxes",
}


def discover() -> list[str]:
    here = Path(__file__).parent
    packages = []
    for name, folder in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(here / folder).parts
            packages.append(".".join([name, *parts]))
    return packages


# docket.egg-info in the repo root would shadow the installed metadata whenever the root is on
# sys.path (`python -m`, `python -c`), and Inspect would then register names without `docket/`.
EGG_BASE = Path("build") / "egg-info"
EGG_BASE.mkdir(parents=True, exist_ok=True)

setup(packages=discover(), package_dir=ROOTS, options={"egg_info": {"egg_base": str(EGG_BASE)}})
