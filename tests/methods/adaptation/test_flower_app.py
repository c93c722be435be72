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


def scripted_deltas(keys: list[str]) -> list[dict[str, np.ndarray]]:
    """Each of two clients' update of every component, the same every round: the A matrix and
    `keys[1]` (a B) agree (one update plus 10 % noise), `keys[2]` (a B) conflicts (+D / -D)."""
    rng = np.random.default_rng(5)
    common = {k: rng.standard_normal((4, 6)) for k in keys}
    return [
        {
            keys[0]: common[keys[0]] + 0.1 * rng.standard_normal((4, 6)),
            keys[1]: common[keys[1]] + 0.1 * rng.standard_normal((4, 6)),
            keys[2]: sign * common[keys[2]],
        }
        for sign in (1.0, -1.0)
    ]


def run_scripted(share_all: bool) -> tuple[Any, Any, dict[str, np.ndarray], list[str]]:
    """FedPissa's ServerApp strategy for two rounds against two scripted ClientApps that add
    `scripted_deltas` to what they receive and sketch every component's update."""
    from flwr.app import Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.supercore.task_identity import TaskIdentity

    from docket.methods.adaptation.flower_app import FedPissaStrategy, InProcessGrid, _record

    keys = [
        "m.layers.0.q_proj.lora_A.weight",
        "m.layers.0.q_proj.lora_B.weight",
        "m.layers.0.v_proj.lora_B.weight",
    ]
    deltas = scripted_deltas(keys)
    initial = {k: np.zeros((4, 6), np.float32) for k in keys}
    client = ClientApp()

    @client.train()
    def _train(msg: Message, context: Context) -> Message:
        delta = deltas[int(context.node_config["partition-id"])]
        received = {k: v.numpy() for k, v in cast_arrays(msg.content["arrays"]).items()}
        dim = int(msg.content["config"]["sketch-dim"])  # type: ignore[arg-type]
        content = RecordDict(
            {
                "arrays": _record(
                    {k: (v + delta[k]).astype(np.float32) for k, v in received.items()}
                ),
                "sketches": _record({k: fedpissa.sketch(delta[k], dim, k) for k in keys}),
                "metrics": MetricRecord({"num-examples": 10}),
            }
        )
        return Message(content, reply_to=msg)

    for name in ("_run_id", "_node_id", "_task_id"):
        if getattr(TaskIdentity, name) is None:
            setattr(TaskIdentity, name, 0)
    grid = InProcessGrid(client, 2, {})
    strategy = FedPissaStrategy(keys, rounds=99, clients=2, sketch_dim=16, share_all=share_all)
    result = strategy.start(grid=grid, initial_arrays=_record(initial), num_rounds=2)
    final = {k: v.numpy() for k, v in result.arrays.items()}
    return strategy, grid, final, keys


def cast_arrays(record: Any) -> ArrayRecord:
    assert isinstance(record, ArrayRecord)
    return record


def test_fedpissa_aggregates_agreeing_components_and_keeps_conflicting_b_private() -> None:
    strategy, grid, final, keys = run_scripted(share_all=False)
    a_key, b_agree, b_conflict = keys
    sent = [sorted(cast_arrays(m.content["arrays"])) for m in grid.sent]
    assert sent == [[a_key]] * 2 + [[a_key, b_agree]] * 2  # round 1: prior; round 2: agreement
    assert strategy.selector.history[0]["min_agreement"][b_conflict] == pytest.approx(-1.0)
    deltas = scripted_deltas(keys)
    mean = {k: (deltas[0][k] + deltas[1][k]) / 2 for k in keys}
    np.testing.assert_allclose(final[a_key], 2 * mean[a_key], atol=1e-5)  # averaged twice
    np.testing.assert_allclose(final[b_agree], mean[b_agree], atol=1e-5)  # averaged in round 2
    np.testing.assert_array_equal(final[b_conflict], 0.0)  # never left a client
    replies = [sorted(cast_arrays(r.content["arrays"])) for r in grid.replies]
    assert all(b_conflict not in r for r in replies)
    assert strategy.summary_dict()["shared_fraction"] == [1 / 3, 2 / 3]


def test_fedpissa_share_all_ablation_averages_the_conflict_away() -> None:
    """Selection off (every component averaged, FedAvg): the conflicting B leaves the clients
    and the two opposite updates cancel in the global model."""
    strategy, grid, final, keys = run_scripted(share_all=True)
    sent = [sorted(cast_arrays(m.content["arrays"])) for m in grid.sent]
    assert sent == [sorted(keys)] * 4
    deltas = scripted_deltas(keys)
    conflict = keys[2]
    # Flower samples the nodes in a random order: reply i answers sent message i
    partition = int(grid.sent[0].metadata.dst_node_id) - 1
    mine = cast_arrays(grid.replies[0].content["arrays"])[conflict].numpy()
    np.testing.assert_allclose(mine, deltas[partition][conflict], atol=1e-6)  # it learnt ±D
    back = cast_arrays(grid.sent[2].content["arrays"])[conflict].numpy()
    np.testing.assert_allclose(back, 0.0, atol=1e-6)  # and gets +D and -D averaged: cancelled
    np.testing.assert_allclose(final[conflict], 0.0, atol=1e-6)
    assert all(m.content["config"]["sketch-dim"] == 0 for m in grid.sent)  # no sketches asked
    assert strategy.summary_dict()["shared_fraction"] == [1.0, 1.0]
