"""The generated leaderboard renders in headless Debian Chromium: its tables, every plot with
drawn data (non-empty SVG paths under a `data-` id), and one screenshot per benchmark section.

Skipped where `chromium` is absent (CI installs Debian's package in `.ci/run`). Screenshots are
kept as CI artifacts in build/artifacts/.
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from docket.reports import build_report
from tests.chromium import ARTIFACTS, CHROMIUM
from tests.chromium import run_chromium as _chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI installs it)")


class PlotParser(HTMLParser):
    """Per `<figure class="plot ...">`: its kind and the non-empty paths under `data-` groups."""

    def __init__(self) -> None:
        super().__init__()
        self.plots: list[dict[str, object]] = []
        self.data_depth = 0  # > 0 while inside an element whose id starts with "data-"
        self.depth = 0
        self.data_entered: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "figure" and "plot" in classes:
            kind = next(c.removeprefix("plot-") for c in classes if c.startswith("plot-"))
            self.plots.append({"kind": kind, "paths": 0})
        self.depth += 1
        if (found.get("id") or "").startswith("data-"):
            self.data_entered.append(self.depth)
        if (
            tag == "path"
            and self.plots
            and (self.data_entered or "data-" in (found.get("id") or ""))
        ):
            if (found.get("d") or "").strip():
                paths = self.plots[-1]["paths"]
                assert isinstance(paths, int)
                self.plots[-1]["paths"] = paths + 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.data_entered and self.data_entered[-1] == self.depth:
            self.data_entered.pop()
        self.depth -= 1


def test_leaderboard_renders_every_plot_and_each_section_in_chromium(
    mixed_logs: Path, survival_logs: Path, tmp_path: Path
) -> None:
    for log in survival_logs.glob("*.eval"):
        shutil.copy2(log, mixed_logs / log.name)
    page = build_report(mixed_logs, tmp_path / "report").html
    url = page.resolve().as_uri()
    dom = _chromium(tmp_path / "profile", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert len(re.findall(r'<table class="leaderboard"', dom.stdout)) == 3
    assert re.search(r"<td>docket/scripted policy=comply</td>", dom.stdout)
    parser = PlotParser()
    parser.feed(dom.stdout)
    kinds = sorted(str(p["kind"]) for p in parser.plots)
    assert kinds == ["headline", "headline", "headline", "iou", "iou", "survival"]
    for plot in parser.plots:  # every plot drew data, not only axes
        assert isinstance(plot["paths"], int) and plot["paths"] > 0, plot

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    sections = re.findall(r'<section class="benchmark" data-benchmark="([^"]+)"', dom.stdout)
    assert sections == ["docket/smoke", "synth"]
    for name in sections:
        only = _chromium(tmp_path / "profile", "--dump-dom", f"{url}?section={name}")
        assert only.stdout.count('<section class="benchmark"') == 1, name
        shot = ARTIFACTS / f"leaderboard-{name.replace('/', '_')}.png"
        shot.unlink(missing_ok=True)
        result = _chromium(
            tmp_path / "profile",
            "--window-size=1200,1800",
            f"--screenshot={shot}",
            f"{url}?section={name}",
        )
        assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
        with Image.open(shot) as image:
            assert image.size == (1200, 1800)
            colours = image.convert("RGB").resize((120, 180)).getcolors(maxcolors=100_000)
        assert colours is not None and len(colours) > 50, name  # tables and plots, not blank
