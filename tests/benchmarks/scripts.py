"""Load a benchmark's experiment script (`benchmarks/<b>/scripts/*.py`, not a package) as a
module, so a test can compare its rendered README table with the committed results."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from docket.core.results_tables import block

ROOT = Path(__file__).parents[2]


def load_script(relative: str) -> ModuleType:
    """The script at `relative` (from the repository root), imported under its file stem."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(f"script_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readme_block_of_results(relative: str) -> tuple[Any, bool]:
    """The script's committed results (a list of rows or an object, as the script writes them),
    and whether its README block is rendered from them."""
    script = load_script(relative)
    rows = json.loads(script.RESULTS.read_text(encoding="utf-8"))
    readme = script.README.read_text(encoding="utf-8")
    return rows, block(script.TABLE, script.render_table(rows)) in readme
