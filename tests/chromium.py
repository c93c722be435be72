"""Headless Debian Chromium for the tests that render a page (the leaderboard, the docs site).

`CHROMIUM` is None where it is absent (CI installs Debian's package in `.ci/run`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
#: Screenshots kept as CI artifacts.
ARTIFACTS = Path(__file__).resolve().parents[1] / "build" / "artifacts"


def run_chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a throwaway profile and `args` (`--dump-dom URL`, ...)."""
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
