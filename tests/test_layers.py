"""The import rule between docket's folders, checked on every module and script of the tree.

benchmarks may import agents, methods, sandboxes and core; agents may import methods, sandboxes
and core; methods, sandboxes and reports import core only; core imports nothing else of docket.
Only the top of the namespace (`docket/*.py`: the registry, the CLI, the suite) imports anything.
A folder's `scripts/` follow its folder's rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Folder -> the other folders its modules may import.
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "methods": frozenset({"core"}),
    "sandboxes": frozenset({"core"}),
    "reports": frozenset({"core"}),
    "agents": frozenset({"core", "methods", "sandboxes"}),
    "benchmarks": frozenset({"core", "agents", "methods", "sandboxes"}),
}


def folder_of(path: Path, root: Path) -> tuple[str, list[str]]:
    """The layer of a source file and its package parts (`docket.<layer>.<...>`)."""
    relative = path.relative_to(root)
    if relative.parts[0] == "docket":
        relative = relative.relative_to("docket")
    return relative.parts[0], ["docket", *relative.parts[:-1]]


def imported_layers(path: Path, package: list[str]) -> list[tuple[int, str]]:
    """(line, folder) of every docket folder that `path` imports, relative imports resolved."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            if module == "docket":  # `from docket import suite` imports docket.suite
                names = [f"docket.{alias.name}" for alias in node.names]
            else:
                names = [module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "docket" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def violations(root: Path) -> list[str]:
    """Every import in the folders under `root` that the rule forbids, as `path:line: a -> b`."""
    sources = [root / "docket" / "core", *(root / name for name in ALLOWED if name != "core")]
    bad = []
    for source in sources:
        for path in sorted(source.rglob("*.py")):
            layer, package = folder_of(path, root)
            for line, target in imported_layers(path, package):
                if target != layer and target in ALLOWED and target not in ALLOWED[layer]:
                    bad.append(f"{path.relative_to(root)}:{line}: {layer} -> {target}")
                elif target not in ALLOWED and target != layer:
                    bad.append(f"{path.relative_to(root)}:{line}: {layer} -> docket.{target}")
    return bad


def test_every_folder_keeps_the_import_rule() -> None:
    assert violations(ROOT) == []


def test_a_planted_upward_import_is_caught(tmp_path: Path) -> None:
    for name in ALLOWED:
        folder = tmp_path / ("docket/core" if name == "core" else name)
        folder.mkdir(parents=True)
    (tmp_path / "methods" / "m").mkdir()
    (tmp_path / "methods" / "m" / "ok.py").write_text("from docket.core import jsonl\n")
    (tmp_path / "methods" / "m" / "up.py").write_text(
        "import os\n\ndef f():\n    from docket.benchmarks.x import y\n"
    )
    (tmp_path / "agents" / "a.py").write_text("from docket import suite\n")
    (tmp_path / "reports" / "r.py").write_text("from ..agents import scripted\n")
    (tmp_path / "docket" / "core" / "c.py").write_text("from docket.methods import rl\n")
    (tmp_path / "benchmarks" / "b.py").write_text("from docket.agents import x\nfrom . import y\n")
    assert violations(tmp_path) == [
        "docket/core/c.py:1: core -> methods",
        "methods/m/up.py:4: methods -> benchmarks",
        "reports/r.py:1: reports -> agents",
        "agents/a.py:1: agents -> docket.suite",
    ]
