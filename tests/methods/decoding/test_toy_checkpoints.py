"""The toy checkpoints shipped with docket: found for their own settings without training,
sha256-checked before loading, and a trained-on-first-use cache for every other setting."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from docket.methods.decoding.dsb.toy_mdlm import checkpoint, train
from docket.methods.decoding.dsb.toy_mdlm.checkpoint import ChecksumMismatch, load, verify_sums
from docket.methods.decoding.dsb.toy_mdlm.train import (
    SHIPPED_ROOT,
    TrainConfig,
    checkpoint_key,
    shipped_checkpoint,
    trained_checkpoint,
)

DEFAULT = SHIPPED_ROOT / checkpoint_key(TrainConfig())
TINY = TrainConfig(steps=2, batch=2, hidden=16, layers=1, heads=2, mlp=16, warmup=1, log_every=1)


@pytest.fixture
def no_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty docket cache, and training that fails the test if it is started."""
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained a checkpoint"))
    return tmp_path / "cache"


def test_the_default_settings_load_the_shipped_checkpoint_without_training(
    no_training: Path,
) -> None:
    assert trained_checkpoint(TrainConfig(threads=2, log_every=50)) == DEFAULT
    model, tokenizer = load(DEFAULT)
    assert sum(p.numel() for p in model.parameters()) == 221_248
    assert model.config.hidden == 64 and model.config.turn_separator_id is None
    assert not no_training.exists()


def test_the_shipped_checkpoint_records_todays_default_config_and_every_file_sum() -> None:
    record = json.loads((DEFAULT / "train_log.json").read_text())
    recorded = {
        k: v for k, v in record["train_config"].items() if k not in ("threads", "log_every")
    }
    defaults = {k: v for k, v in asdict(TrainConfig()).items() if k not in ("threads", "log_every")}
    assert recorded == defaults
    listed = [line.split("  ")[1] for line in (DEFAULT / checkpoint.SUMS).read_text().splitlines()]
    assert sorted(listed) == sorted(p.name for p in DEFAULT.iterdir() if p.name != checkpoint.SUMS)
    assert verify_sums(DEFAULT, required=True)
    size = sum(p.stat().st_size for p in DEFAULT.iterdir())
    assert size < 1_000_000  # small enough to ship in the wheel


def _shipped_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shipped"
    copy = root / DEFAULT.name
    shutil.copytree(DEFAULT, copy)
    monkeypatch.setattr(train, "SHIPPED_ROOT", root)
    return copy


def test_a_corrupt_shipped_file_is_refused_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_training: Path
) -> None:
    copy = _shipped_copy(tmp_path, monkeypatch)
    weights = bytearray((copy / "model.safetensors").read_bytes())
    weights[-1] ^= 1  # one bit of one weight
    (copy / "model.safetensors").write_bytes(bytes(weights))
    message = f"{copy / 'model.safetensors'}: sha256 differs from SHA256SUMS; the file is corrupt"
    with pytest.raises(ChecksumMismatch) as raised:
        trained_checkpoint(TrainConfig())
    assert str(raised.value) == message
    with pytest.raises(ChecksumMismatch, match="the file is corrupt"):
        load(copy)


def test_a_shipped_checkpoint_without_sums_or_with_another_config_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_training: Path
) -> None:
    copy = _shipped_copy(tmp_path, monkeypatch)
    log = json.loads((copy / "train_log.json").read_text())
    log["train_config"]["steps"] = 300
    (copy / "train_log.json").write_text(json.dumps(log))
    checkpoint.write_sums(copy)  # consistent sums of a mislabelled directory
    with pytest.raises(ChecksumMismatch, match="train_log.json records another config"):
        shipped_checkpoint(TrainConfig())
    (copy / checkpoint.SUMS).unlink()
    with pytest.raises(ChecksumMismatch, match="no SHA256SUMS; the checkpoint cannot be verified"):
        shipped_checkpoint(TrainConfig())
    assert verify_sums(copy) is False  # a directory of one's own without sums still loads
    (copy / checkpoint.SUMS).write_text("00  config.json\n")
    with pytest.raises(ChecksumMismatch, match="does not list model.safetensors"):
        verify_sums(copy)


def test_other_settings_are_trained_into_the_cache_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))
    assert shipped_checkpoint(TINY) is None
    folder = trained_checkpoint(TINY, log=lambda _: None)
    assert folder == tmp_path / "cache" / "toy_mdlm" / checkpoint_key(TINY)
    assert verify_sums(folder, required=True)  # `train` records the sums of what it wrote
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained twice"))
    assert trained_checkpoint(TINY) == folder
    load(folder)
