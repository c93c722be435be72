"""Load a benchmark's experiment script (`benchmarks/<b>/scripts/*.py`, not a package) as a
module, so a test can compare its rendered README table with the committed results."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[2]


def load_script(relative: str) -> ModuleType:
    """The script at `relative` (from the repository root), imported under its file stem."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(f"script_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
