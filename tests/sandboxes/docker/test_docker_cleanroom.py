"""The clean room on Inspect's docker sandbox: the attacks of `test_cleanroom`, same verdicts.

Without it (`naive`) every attack passes the hidden check that must fail; with it
(`scoring_sandbox`: the container restarts, so every process of the agent's ends, then clean
execs), only the honest agent passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandboxes.cleanroom_probe import NAIVE
from tests.sandboxes.test_cleanroom import CLEAN, run_probe

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_without_the_clean_room_every_attack_passes(docker_engine: str, tmp_path: Path) -> None:
    assert run_probe("naive", "docker", tmp_path) == NAIVE


def test_in_the_clean_room_only_the_honest_agent_passes(docker_engine: str, tmp_path: Path) -> None:
    assert run_probe("clean", "docker", tmp_path) == CLEAN
