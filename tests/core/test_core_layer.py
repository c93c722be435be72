"""`docket.core` is the bottom layer: it imports nothing of docket outside itself."""

import ast
import subprocess
import sys
from pathlib import Path

import docket.core

CORE = Path(docket.core.__file__).parent


def _docket_imports(path: Path) -> list[str]:
    """Every module of docket that `path` imports (absolute or relative)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("docket")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append("docket.core." + (node.module or ""))
            elif node.module and node.module.startswith("docket"):
                found.append(node.module)
    return found


def test_core_imports_nothing_of_docket_outside_core() -> None:
    modules = sorted(CORE.glob("*.py"))
    assert modules
    outside = {
        f"{path.name}: {name}"
        for path in modules
        for name in _docket_imports(path)
        if name != "docket.core" and not name.startswith("docket.core.")
    }
    assert not outside


def test_importing_core_pulls_no_torch() -> None:
    names = ", ".join(f"docket.core.{path.stem}" for path in sorted(CORE.glob("[a-z]*.py")))
    script = f"import sys, {names}\nprint('torch' in sys.modules, 'transformers' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "False"]
