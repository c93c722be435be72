"""docket runs no code from the Hub: transformers' Hub kernels stay off unless the user opts in.

transformers >= 5.25 turns `use_kernels` on by default, which fetches kernel code from the Hub
and runs it on load; importing docket sets `USE_HUB_KERNELS=NO` unless the user set it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, os, sys
import docket
from docket.core.tiny_models import ascii_tokenizer, tiny_causal_lm
from docket.methods.local.loading import CheckpointSpec, load

folder = sys.argv[1]
tokenizer = ascii_tokenizer()
tiny_causal_lm(len(tokenizer)).save_pretrained(folder)
tokenizer.save_pretrained(folder)
loaded = load(CheckpointSpec(path=folder))
print(json.dumps({
    "env": os.environ.get("USE_HUB_KERNELS"),
    "use_kernels": bool(getattr(loaded.model, "use_kernels", False)),
}))
"""


def run_probe(folder: Path, extra_env: dict[str, str]) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "USE_HUB_KERNELS"} | extra_env
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_model_docket_loads_uses_no_hub_kernels(tmp_path: Path) -> None:
    assert run_probe(tmp_path / "model", {}) == {"env": "NO", "use_kernels": False}


def test_the_users_own_setting_is_kept() -> None:
    env = {k: v for k, v in os.environ.items() if k != "USE_HUB_KERNELS"}
    env["USE_HUB_KERNELS"] = "YES"
    done = subprocess.run(
        [sys.executable, "-c", "import os, docket; print(os.environ['USE_HUB_KERNELS'])"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "YES"
