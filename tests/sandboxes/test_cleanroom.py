"""Scorers in a clean room (`docket.sandboxes.scoring_sandbox`) against hostile agents, on bwrap.

Each agent of `cleanroom_probe.AGENTS` runs through Inspect's `bash_session()`/`text_editor()`
(scripted `stateful` policy). Without the clean room (`naive`) every attack turns the hidden
check that must fail into a pass (1.0) and the honest agent passes; with it, only the honest
agent passes. The same runs on docker are in `docker/test_docker_cleanroom.py`.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from tests.sandboxes.bwrap_support import requires_bwrap
from tests.sandboxes.cleanroom_probe import AGENTS, NAIVE, probe
from tests.scores import sample_score

pytestmark = requires_bwrap


def scores(log: EvalLog) -> dict[str, float]:
    """Each sample's score (1.0 for CORRECT), by agent name; every sample must be scored."""
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == len(AGENTS)
    found: dict[str, float] = {}
    for sample in log.samples:
        assert sample.error is None, sample.error
        found[str(sample.id)] = 1.0 if sample_score(sample, "hidden_check").value == "C" else 0.0
    return found


#: The clean room's verdicts: only the honest agent passes.
CLEAN: dict[str, float] = {name: float(name == "honest") for name in AGENTS}


def run_probe(mode: str, kind: str, log_dir: Path) -> dict[str, float]:
    """Run every agent of the probe in `mode` on sandbox `kind`."""
    model = get_model("docket/scripted", policy="stateful")
    [log] = inspect_eval(
        probe(mode, kind), model=model, log_dir=str(log_dir), display="none", max_samples=4
    )
    return scores(log)


def test_without_the_clean_room_every_attack_passes(tmp_path: Path) -> None:
    assert run_probe("naive", "bwrap", tmp_path) == NAIVE


def test_in_the_clean_room_only_the_honest_agent_passes(tmp_path: Path) -> None:
    assert run_probe("clean", "bwrap", tmp_path) == CLEAN
