"""Scorers in a clean room (`docket.sandboxes.scoring_sandbox`) against hostile agents, on bwrap.

Each agent of `cleanroom_probe.AGENTS` runs through Inspect's `bash_session()`/`text_editor()`
(scripted `stateful` policy). Without the clean room (`naive`) every attack turns the hidden
check that must fail into a pass (1.0) and the honest agent passes; with it, only the honest
agent passes. The same runs on docker are in `docker/test_docker_cleanroom.py`.
"""

from __future__ import annotations

from pathlib import Path

from tests.sandboxes.bwrap_support import requires_bwrap
from tests.sandboxes.cleanroom_probe import CLEAN, NAIVE, run_probe

pytestmark = requires_bwrap


def test_without_the_clean_room_every_attack_passes(tmp_path: Path) -> None:
    assert run_probe("naive", "bwrap", tmp_path) == NAIVE


def test_in_the_clean_room_only_the_honest_agent_passes(tmp_path: Path) -> None:
    assert run_probe("clean", "bwrap", tmp_path) == CLEAN
