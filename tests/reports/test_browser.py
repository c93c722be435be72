"""The generated leaderboard loads in headless Debian Chromium with its tables and plots.

Skipped where `chromium` is absent (CI installs Debian's package in `.ci/run`). The screenshot is
kept as a CI artifact at build/artifacts/leaderboard.png.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from docket.reports import build_report
from PIL import Image

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "artifacts"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI installs it)")


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(CHROMIUM),
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


def test_leaderboard_renders_in_chromium(mixed_logs: Path, tmp_path: Path) -> None:
    page = build_report(mixed_logs, tmp_path / "report").html
    url = page.resolve().as_uri()
    dom = _chromium(tmp_path / "profile", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert len(re.findall(r'<table class="leaderboard"', dom.stdout)) == 2
    assert re.search(r"<td>docket/scripted policy=comply</td>", dom.stdout)
    assert len(re.findall(r"<svg\b", dom.stdout)) == 4  # 2 headline plots, survival, IoU

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "leaderboard.png"
    shot.unlink(missing_ok=True)
    result = _chromium(tmp_path / "profile", "--window-size=1200,2400", f"--screenshot={shot}", url)
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == (1200, 2400)
        colours = image.convert("RGB").resize((120, 240)).getcolors(maxcolors=100_000)
    assert colours is not None and len(colours) > 50  # text, tables and plots, not a blank page
