"""The Flower app in-process (no Ray): what each strategy sends, byte counts, client state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("flwr", reason="needs flwr (Python >= 3.11): pip install 'docket[adaptation]'")
from flwr.app import ArrayRecord, Context

from docket.core.jsonl import write_jsonl
from docket.methods.adaptation import fedpissa
from docket.methods.adaptation.flower_app import FedSettings, run_in_process

LABELS = ["red", "blue"]
SKETCH_DIM = 8


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two clients; client 0 mostly `red`, client 1 mostly `blue`."""
    folder = tmp_path_factory.mktemp("fed-data")
    (folder / "task.json").write_text(json.dumps({"labels": LABELS, "prompt": "Colour? {text}"}))
    for client, majority in enumerate(LABELS):
        target = folder / f"client-{client}"
        target.mkdir()
        for split, n in (("train", 12), ("heldout", 4)):
            rows = [
                {"text": f"{label} thing {i}", "label": label}
                for i in range(n)
                for label in [majority if i % 4 else LABELS[1 - client]]
            ]
            write_jsonl(target / f"{split}.jsonl", rows)
    return folder


def settings(base: Path, data: Path, strategy: str, tmp: Path, **extra: Any) -> dict[str, Any]:
    return {
        "base-model": str(base),
        "data-dir": str(data),
        "strategy": strategy,
        "clients": 2,
        "rounds": 2,
        "rank": 2,
        "targets": "q_proj,v_proj",
        "local-steps": 2,
        "batch-size": 4,
        "sketch-dim": SKETCH_DIM,
        "out": str(tmp / f"{strategy}.json"),
        **extra,
    }


def client_arrays(context: Context, name: str) -> ArrayRecord:
    """The arrays a client keeps in its context state under `name`."""
    record = context.state[name]
    assert isinstance(record, ArrayRecord)
    return record


def lora_numel(keys: list[str], shapes: dict[str, tuple[int, ...]]) -> int:
    return sum(int(np.prod(shapes[k])) for k in keys)


def test_settings_parse_run_config_keys() -> None:
    parsed = FedSettings.from_config({"local-steps": "3", "select": "false", "lr": 1})
    assert (parsed.local_steps, parsed.select, parsed.lr) == (3, False, 1.0)
    with pytest.raises(ValueError, match="unknown run config key 'nope'"):
        FedSettings.from_config({"nope": 1})
    with pytest.raises(ValueError, match="strategy 'fedx'"):
        FedSettings.from_config({"strategy": "fedx"})
    with pytest.raises(ValueError, match="rounds='many' must be int"):
        FedSettings.from_config({"rounds": "many"})


@pytest.mark.parametrize("strategy", ["fedavg", "fedsa", "fedpissa"])
def test_strategies_send_what_they_share_and_count_it(
    strategy: str, tiny_dir: Path, data_dir: Path, tmp_path: Path, one_thread: None
) -> None:
    summary, grid = run_in_process(settings(tiny_dir, data_dir, strategy, tmp_path))
    states = {n: client_arrays(c, "lora") for n, c in grid.contexts.items()}
    shapes = {k: tuple(v.shape) for k, v in states[1].items()}
    keys = sorted(shapes)
    assert len(keys) == 8  # 2 layers x (q, v) x (A, B)
    a_keys = [k for k in keys if fedpissa.is_lora_a(k)]
    expected = {"fedavg": keys, "fedsa": a_keys, "fedpissa": a_keys}[strategy]
    first = summary["rounds"][0]
    per_client = 4 * lora_numel(expected, shapes)  # float32
    sketches = 4 * SKETCH_DIM * len(keys) if strategy == "fedpissa" else 0
    assert first["shared"] == len(expected)
    assert first["payload_down"] == 2 * per_client
    assert first["payload_up"] == 2 * (per_client + sketches)
    assert first["wire_up"] > first["payload_up"]  # headers and key names come on top
    # nothing but the shared components ever leaves a client
    train_replies = [r for r in grid.replies if "arrays" in r.content]
    assert train_replies and all(sorted(r.content["arrays"]) == expected for r in train_replies[:2])
    private = sorted(set(keys) - set(expected))
    for key in private:  # kept client-side, different on the two clients
        assert not np.allclose(states[1][key].numpy(), states[2][key].numpy())
    assert set(summary["client_accuracy"]) == {"0", "1"}
    assert 0.0 <= summary["personalised_accuracy"] <= 1.0
    written = json.loads(Path(tmp_path / f"{strategy}.json").read_text())
    assert written["strategy"] == strategy and len(written["rounds"]) == 2


def test_fedpissa_projects_private_updates_off_their_reference(
    tiny_dir: Path, data_dir: Path, tmp_path: Path, one_thread: None
) -> None:
    run = settings(tiny_dir, data_dir, "fedpissa", tmp_path, rounds=1, select=False)
    summary, grid = run_in_process(run)
    context = grid.contexts[1]
    lora = {k: v.numpy() for k, v in client_arrays(context, "lora").items()}
    reference = {k: v.numpy() for k, v in client_arrays(context, "reference").items()}
    b_keys = [k for k in lora if fedpissa.is_lora_b(k)]
    assert summary["shared_final"] == sorted(k for k in lora if fedpissa.is_lora_a(k))
    for key in b_keys:  # the B update stays off the column space of the PiSSA init
        q = fedpissa.orthonormal_basis(reference[key], key)
        np.testing.assert_allclose(q.T @ (lora[key] - reference[key]), 0.0, atol=1e-5)
    assert any(not np.allclose(lora[k], reference[k]) for k in b_keys)
    assert summary["rounds"][0]["payload_up"] == 2 * 4 * sum(
        lora[k].size for k in lora if fedpissa.is_lora_a(k)
    )  # select=False: no sketches


def test_missing_data_is_one_clear_error(tiny_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fedpissa: unreadable .*task.json"):
        run_in_process(settings(tiny_dir, tmp_path / "nowhere", "fedsa", tmp_path))
