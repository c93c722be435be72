"""Shares the bwrap test helpers of tests/sandboxes (`bwrap_support`) with this folder."""

from __future__ import annotations

import sys
from pathlib import Path

_SANDBOX_TESTS = str(Path(__file__).resolve().parents[1] / "sandboxes")
if _SANDBOX_TESTS not in sys.path:
    sys.path.insert(0, _SANDBOX_TESTS)
